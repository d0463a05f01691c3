// Package ratelimit keys golang.org/x/time/rate's token buckets by user
// (the API and the WebSocket) or by account and client address (failed
// logins). Buckets that have refilled are dropped now and then, so the map
// stays bounded by active keys.
package ratelimit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter allows Rate events per second per key with bursts up to Burst.
type Limiter struct {
	Rate  rate.Limit
	Burst int
	Now   func() time.Time // for tests; default time.Now

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	sweep   time.Time
}

// New returns a limiter; burst defaults to twice the rate (at least 1).
func New(perSecond float64) *Limiter {
	return &Limiter{Rate: rate.Limit(perSecond), Burst: max(1, int(2*perSecond))}
}

// NewPerWindow returns a limiter that allows n events at once and then n
// more per window (failed logins: 5, then 5 more per 5 minutes).
func NewPerWindow(n int, window time.Duration) *Limiter {
	n = max(1, n)
	return &Limiter{Rate: rate.Limit(float64(n) / window.Seconds()), Burst: n}
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
		l.buckets = map[string]*rate.Limiter{}
	}
	if now.Sub(l.sweep) > time.Minute {
		// Only a bucket that has refilled is dropped: it is the same as a
		// new one, so a throttled key stays throttled however long it idles.
		for k, b := range l.buckets {
			if b.TokensAt(now) >= float64(l.Burst) {
				delete(l.buckets, k)
			}
		}
		l.sweep = now
	}
	b, ok := l.buckets[key]
	if !ok {
		b = rate.NewLimiter(l.Rate, l.Burst)
		if spend {
			l.buckets[key] = b
		}
	}
	if !spend {
		if tokens := b.TokensAt(now); tokens < 1 {
			return false, l.wait(tokens)
		}
		return true, 0
	}
	if b.AllowN(now, 1) {
		return true, 0
	}
	return false, l.wait(b.TokensAt(now))
}

// wait is how long until a bucket holding tokens has one.
func (l *Limiter) wait(tokens float64) time.Duration {
	return time.Duration((1 - tokens) / float64(l.Rate) * float64(time.Second))
}
