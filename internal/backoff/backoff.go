// Package backoff is flightdeck's one retry delay: exponential from a base,
// capped, and jittered, so the saga's step retries, the http action, the
// LLM client and the queue's writer wait alike; the webhook schedule is a
// list of delays but shares the jitter.
//
// It is not cenkalti/backoff: that is a stateful iterator (NextBackOff),
// while every caller here knows its attempt number (the saga's comes from
// stored rows, the webhook's from the delivery), and its MaxInterval caps
// the delay before the jitter, so a delay may exceed it.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Spread is the jitter: a delay d becomes a uniform pick in
// [d·(1-Spread), d·(1+Spread)], so callers that failed together do not
// retry together.
const Spread = 0.2

// Exponential is the wait before retry n (1-based): base·2^(n-1), at most
// ceiling, jittered and still at most ceiling. ceiling ≤ 0 means no
// ceiling but the largest duration; no n overflows.
func Exponential(base, ceiling time.Duration, n int) time.Duration {
	if base <= 0 {
		return 0
	}
	if ceiling <= 0 {
		ceiling = time.Duration(1<<63 - 1)
	}
	d := ceiling
	if k := max(n-1, 0); k < 63 && base <= ceiling>>k {
		d = base << k // base·2^k ≤ ceiling, so no overflow
	}
	return min(Jitter(d), ceiling)
}

// Jitter spreads d by ±Spread; d ≤ 0 is 0.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	f := 1 + Spread*(2*rand.Float64()-1)
	if j := float64(d) * f; j < float64(1<<63-1) {
		return time.Duration(j)
	}
	return time.Duration(1<<63 - 1)
}
