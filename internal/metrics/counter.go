package metrics

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Counter is a value that only goes up.
type Counter struct {
	name, help string
	v          atomicFloat
}

// NewCounter returns a counter named name (register it to serve it).
func NewCounter(name, help string) *Counter {
	opts(name, help, nil)
	return &Counter{name: name, help: help}
}

// Inc adds one.
func (c *Counter) Inc() { c.v.add(1) }

// Add adds v, which must not be negative (a counter only goes up).
func (c *Counter) Add(v float64) {
	if v < 0 {
		panic(fmt.Sprintf("metrics: %s cannot decrease", c.name))
	}
	c.v.add(v)
}

// Value is the count so far.
func (c *Counter) Value() float64 { return c.v.load() }

func (c *Counter) names() []string { return []string{c.name} }

func (c *Counter) collect(e *encoder) {
	e.family(c.name, c.help, "counter").sample(c.name, nil, nil, "", "", c.v.load())
}

// CounterVec is a counter per combination of label values.
type CounterVec struct{ v *vec[atomicFloat] }

// NewCounterVec returns a counter vector with the given label names.
func NewCounterVec(name, help string, labels []string) *CounterVec {
	return &CounterVec{newVec[atomicFloat](name, help, labels)}
}

// WithLabelValues is the counter of these values, given in the order of
// the label names NewCounterVec was given; it panics on a wrong count.
func (c *CounterVec) WithLabelValues(values ...string) VecCounter {
	return VecCounter{c.v.get(values)}
}

// VecCounter is one series of a CounterVec.
type VecCounter struct{ v *atomicFloat }

// Inc adds one.
func (c VecCounter) Inc() { c.v.add(1) }

// Add adds v, which must not be negative.
func (c VecCounter) Add(v float64) {
	if v < 0 {
		panic("metrics: a counter cannot decrease")
	}
	c.v.add(v)
}

func (c *CounterVec) names() []string { return []string{c.v.name} }

func (c *CounterVec) collect(e *encoder) {
	f := e.family(c.v.name, c.v.help, "counter")
	c.v.each(func(values []string, v *atomicFloat) {
		f.sample(c.v.name, c.v.labels, values, "", "", v.load())
	})
}

// GaugeFunc is a gauge whose value fn gives at each scrape.
type GaugeFunc struct {
	name, help string
	fn         func() float64
}

// NewGaugeFunc returns a gauge read from fn.
func NewGaugeFunc(name, help string, fn func() float64) *GaugeFunc {
	opts(name, help, nil)
	return &GaugeFunc{name: name, help: help, fn: fn}
}

func (g *GaugeFunc) names() []string { return []string{g.name} }

func (g *GaugeFunc) collect(e *encoder) {
	e.family(g.name, g.help, "gauge").sample(g.name, nil, nil, "", "", g.fn())
}

// vec holds the series of a vector metric by their label values.
type vec[T any] struct {
	name, help string
	labels     []string // sorted
	perm       []int    // perm[i]: the caller's index of labels[i]

	mu     sync.RWMutex
	series map[string]*series[T]
	init   func(*T)
}

type series[T any] struct {
	values []string // in the order of vec.labels
	m      T
}

func newVec[T any](name, help string, labels []string) *vec[T] {
	sorted, perm := opts(name, help, labels)
	return &vec[T]{name: name, help: help, labels: sorted, perm: perm, series: map[string]*series[T]{}}
}

// get is the series of values (in the caller's label order), made on
// first use.
func (v *vec[T]) get(values []string) *T {
	if len(values) != len(v.labels) {
		panic(fmt.Sprintf("metrics: %s has %d labels, got %d values", v.name, len(v.labels), len(values)))
	}
	var key strings.Builder
	for _, p := range v.perm {
		key.WriteString(values[p])
		key.WriteByte(0xff) // not in valid UTF-8, so no two value lists share a key
	}
	k := key.String()
	v.mu.RLock()
	s := v.series[k]
	v.mu.RUnlock()
	if s != nil {
		return &s.m
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if s = v.series[k]; s != nil {
		return &s.m
	}
	s = &series[T]{values: make([]string, len(values))}
	for i, p := range v.perm {
		// Values come from requests (a route, a method): keep the output
		// valid UTF-8 rather than refuse them.
		s.values[i] = strings.ToValidUTF8(values[p], "\uFFFD")
	}
	if v.init != nil {
		v.init(&s.m)
	}
	v.series[k] = s
	return &s.m
}

// each calls fn for every series, sorted by label values.
func (v *vec[T]) each(fn func(values []string, m *T)) {
	v.mu.RLock()
	keys := make([]string, 0, len(v.series))
	for k := range v.series {
		keys = append(keys, k)
	}
	all := make([]*series[T], 0, len(keys))
	slices.Sort(keys)
	for _, k := range keys {
		all = append(all, v.series[k])
	}
	v.mu.RUnlock()
	for _, s := range all {
		fn(s.values, &s.m)
	}
}
