package metrics

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"sync/atomic"
)

// HistogramVec is a histogram per combination of label values: counts
// of observations at or below each bucket's upper bound, their sum and
// their count.
type HistogramVec struct {
	v       *vec[histogram]
	buckets []float64
}

// NewHistogramVec returns a histogram vector; buckets are upper bounds,
// increasing (nil: DefBuckets). +Inf is implied.
func NewHistogramVec(name, help string, buckets []float64, labels []string) *HistogramVec {
	if buckets == nil {
		buckets = DefBuckets
	}
	buckets = slices.Clone(buckets)
	if n := len(buckets); n > 0 && math.IsInf(buckets[n-1], 1) {
		buckets = buckets[:n-1]
	}
	for i := range buckets {
		if math.IsNaN(buckets[i]) || i > 0 && buckets[i] <= buckets[i-1] {
			panic(fmt.Sprintf("metrics: %s's buckets must increase", name))
		}
	}
	h := &HistogramVec{v: newVec[histogram](name, help, labels), buckets: buckets}
	h.v.init = func(s *histogram) { s.counts = make([]atomic.Uint64, len(buckets)+1) }
	return h
}

// WithLabelValues is the histogram of these values, in the order of the
// label names NewHistogramVec was given; it panics on a wrong count.
func (h *HistogramVec) WithLabelValues(values ...string) Observer {
	return Observer{h.v.get(values), h.buckets}
}

// Observer is one series of a HistogramVec.
type Observer struct {
	h       *histogram
	buckets []float64
}

// Observe records v.
func (o Observer) Observe(v float64) {
	// The first bucket whose bound is >= v (le: less or equal); past the
	// last, the +Inf one.
	i := sort.SearchFloat64s(o.buckets, v)
	o.h.counts[i].Add(1)
	o.h.sum.add(v)
}

// histogram keeps each bucket's own count (not cumulative), so an
// observation is one atomic add; the count is their total.
type histogram struct {
	counts []atomic.Uint64 // len(buckets)+1: the last is above every bound
	sum    atomicFloat
}

func (h *HistogramVec) names() []string { return []string{h.v.name} }

func (h *HistogramVec) collect(e *encoder) {
	name := h.v.name
	f := e.family(name, h.v.help, "histogram")
	h.v.each(func(values []string, s *histogram) {
		var cum uint64
		for i, b := range h.buckets {
			cum += s.counts[i].Load()
			f.sample(name+"_bucket", h.v.labels, values, "le", formatFloat(b), float64(cum))
		}
		cum += s.counts[len(h.buckets)].Load()
		f.sample(name+"_bucket", h.v.labels, values, "le", "+Inf", float64(cum))
		f.sample(name+"_sum", h.v.labels, values, "", "", s.sum.load())
		f.sample(name+"_count", h.v.labels, values, "", "", float64(cum))
	})
}
