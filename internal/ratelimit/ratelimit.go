// Package ratelimit is a small per-key token bucket limiter (per user for the
// API and the WebSocket). Buckets idle for a while are dropped so the map
// stays bounded by active users.
package ratelimit

import (
	"sync"
	"time"
)

// Limiter allows Rate events per second per key with bursts up to Burst.
type Limiter struct {
	Rate  float64
	Burst float64
	Now   func() time.Time // for tests; default time.Now

	mu      sync.Mutex
	buckets map[string]*bucket
	sweep   time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// New returns a limiter; burst defaults to twice the rate (at least 1).
func New(rate float64) *Limiter {
	return &Limiter{Rate: rate, Burst: max(1, 2*rate), buckets: map[string]*bucket{}}
}

// Allow takes one token for key and reports whether it was available, and
// if not, how long until one is.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	now := time.Now()
	if l.Now != nil {
		now = l.Now()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = map[string]*bucket{}
	}
	if now.Sub(l.sweep) > time.Minute {
		for k, b := range l.buckets {
			if now.Sub(b.last) > time.Minute {
				delete(l.buckets, k)
			}
		}
		l.sweep = now
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.Burst, last: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.Burst, b.tokens+now.Sub(b.last).Seconds()*l.Rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.Rate * float64(time.Second))
}
