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

// NewPerWindow returns a limiter that allows n events at once and then n
// more per window (failed logins: 5, then 5 more per 5 minutes).
func NewPerWindow(n int, window time.Duration) *Limiter {
	n = max(1, n)
	return &Limiter{Rate: float64(n) / window.Seconds(), Burst: float64(n), buckets: map[string]*bucket{}}
}

// Allow takes one token for key and reports whether it was available, and
// if not, how long until one is.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	return l.take(key, true)
}

// Peek reports whether Allow would succeed for key, and if not, how long
// until it would, without taking a token: a login checks its throttle
// first and spends a token only when it fails.
func (l *Limiter) Peek(key string) (bool, time.Duration) {
	return l.take(key, false)
}

func (l *Limiter) take(key string, spend bool) (bool, time.Duration) {
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
		// Only a bucket that has refilled is dropped: it is the same as a
		// new one, so a throttled key stays throttled however long it idles.
		for k, b := range l.buckets {
			if b.tokens+now.Sub(b.last).Seconds()*l.Rate >= l.Burst {
				delete(l.buckets, k)
			}
		}
		l.sweep = now
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.Burst, last: now}
		if spend {
			l.buckets[key] = b
		}
	}
	b.tokens = min(l.Burst, b.tokens+now.Sub(b.last).Seconds()*l.Rate)
	b.last = now
	if b.tokens >= 1 {
		if spend {
			b.tokens--
		}
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.Rate * float64(time.Second))
}
