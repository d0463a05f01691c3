// Package metrics is flightdeck's Prometheus instrumentation: counters,
// histograms and a registry that serves them in the text exposition format
// (version 0.0.4), which every Prometheus-compatible scraper reads.
//
// It replaces prometheus/client_golang, whose module graph (protobuf,
// client_model, common, procfs) was about a tenth of what a first build
// compiled, for the handful of metric kinds flightdeck uses. Names, types
// and label sets are the ones client_golang served, so dashboards and
// alerts keep working.
package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// DefBuckets are the default histogram buckets, client_golang's
// (prometheus.DefBuckets): request latencies from 5 ms to 10 s.
var DefBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// ContentType is the exposition format's media type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

var (
	nameRE  = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// Metric is one or more metric families the Registry serves: the types of
// this package (Counter, CounterVec, HistogramVec, GaugeFunc, the runtime
// and process collectors).
type Metric interface {
	// names are the families' names, checked for duplicates on Register.
	names() []string
	// collect writes the families' current values.
	collect(e *encoder)
}

// AlreadyRegisteredError is Register's answer for a name that is taken;
// Existing is the metric that holds it.
type AlreadyRegisteredError struct {
	Name     string
	Existing Metric
}

func (e AlreadyRegisteredError) Error() string {
	return fmt.Sprintf("a metric named %s is already registered", e.Name)
}

// Registry holds metrics and serves them (ServeHTTP, Write). Its zero
// value is not usable: use NewRegistry.
type Registry struct {
	mu      sync.RWMutex
	byName  map[string]Metric
	metrics []Metric
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byName: map[string]Metric{}} }

// Register adds m, or refuses it with an AlreadyRegisteredError when one
// of its names is taken (two metrics of one name would be served as one
// family with clashing series).
func (r *Registry) Register(m Metric) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range m.names() {
		if ex, ok := r.byName[n]; ok {
			return AlreadyRegisteredError{Name: n, Existing: ex}
		}
	}
	for _, n := range m.names() {
		r.byName[n] = m
	}
	r.metrics = append(r.metrics, m)
	return nil
}

// MustRegister registers each of ms and panics on a taken name (wiring
// at startup, where a clash is a programming error).
func (r *Registry) MustRegister(ms ...Metric) {
	for _, m := range ms {
		if err := r.Register(m); err != nil {
			panic(err)
		}
	}
}

// Registered registers m and returns it, or returns the metric of the
// same kind already registered under its name: two servers sharing a
// registry (tests) count into one. A name taken by another kind panics.
func Registered[M Metric](r *Registry, m M) M {
	err := r.Register(m)
	if err == nil {
		return m
	}
	var are AlreadyRegisteredError
	if errors.As(err, &are) {
		if ex, ok := are.Existing.(M); ok {
			return ex
		}
	}
	panic(err)
}

// WriteTo writes every registered family in the text format, sorted by
// name as client_golang does, so scrapes diff well.
func (r *Registry) WriteTo(out io.Writer) (int64, error) {
	r.mu.RLock()
	ms := slices.Clone(r.metrics)
	r.mu.RUnlock()
	e := &encoder{families: map[string]*family{}}
	for _, m := range ms {
		m.collect(e)
	}
	names := make([]string, 0, len(e.families))
	for n := range e.families {
		names = append(names, n)
	}
	slices.Sort(names)
	var w bytes.Buffer
	for _, n := range names {
		f := e.families[n]
		if f.body.Len() == 0 {
			continue // a vector with no series yet: client_golang leaves it out too
		}
		w.WriteString("# HELP ")
		w.WriteString(n)
		w.WriteByte(' ')
		w.WriteString(escapeHelp(f.help))
		w.WriteString("\n# TYPE ")
		w.WriteString(n)
		w.WriteByte(' ')
		w.WriteString(f.typ)
		w.WriteByte('\n')
		w.Write(f.body.Bytes())
	}
	return w.WriteTo(out)
}

// ServeHTTP answers a scrape.
func (r *Registry) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", ContentType)
	_, _ = r.WriteTo(w) // a scraper that left needs no answer
}

// opts checks a metric's name, help and label names (at construction, so
// a bad one fails the first test that makes it) and returns the label
// names sorted, with, for each sorted position, the caller's index.
func opts(name, help string, labels []string) (sorted []string, perm []int) {
	if !nameRE.MatchString(name) {
		panic(fmt.Sprintf("metrics: invalid metric name %q", name))
	}
	if help == "" {
		panic(fmt.Sprintf("metrics: %s has no help text", name))
	}
	perm = make([]int, len(labels))
	for i, l := range labels {
		if !labelRE.MatchString(l) || strings.HasPrefix(l, "__") || l == "le" || l == "quantile" {
			panic(fmt.Sprintf("metrics: invalid label name %q on %s", l, name))
		}
		perm[i] = i
	}
	// Series print their labels sorted by name, as client_golang does.
	slices.SortFunc(perm, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	sorted = make([]string, len(labels))
	for i, p := range perm {
		sorted[i] = labels[p]
		if i > 0 && sorted[i] == sorted[i-1] {
			panic(fmt.Sprintf("metrics: label %q twice on %s", sorted[i], name))
		}
	}
	return sorted, perm
}

// atomicFloat is a float64 updated without a lock.
type atomicFloat struct{ bits atomic.Uint64 }

func (f *atomicFloat) add(v float64) {
	for {
		old := f.bits.Load()
		if f.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

func (f *atomicFloat) load() float64 { return math.Float64frombits(f.bits.Load()) }
