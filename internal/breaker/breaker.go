// Package breaker is the one circuit breaker of flightdeck, used by the
// http action (one per host) and the LLM client (one per server): after
// Failures consecutive failed calls it opens and refuses calls for OpenFor;
// then it half-opens and lets one probe through at a time; Successes
// successful probes in a row close it, a failed probe opens it again.
//
// It is not sony/gobreaker: there the half-open state's request limit is
// also its success threshold (MaxRequests), so "one probe at a time, close
// after two successes" cannot be said, its clock cannot be set in tests,
// and it does not tell when it half-opens, which a caller's retry needs to
// wait for.
package breaker

import (
	"cmp"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrOpen: the breaker refuses calls for now.
var ErrOpen = errors.New("circuit open")

// OpenError is ErrOpen with the time the breaker half-opens. While a probe
// is out, Until is already past: a retry should wait its usual backoff.
type OpenError struct {
	Until time.Time
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("circuit open; next probe after %s", e.Until.UTC().Format(time.RFC3339))
}

func (e *OpenError) Unwrap() error { return ErrOpen }

// RetryWait is how long a caller waits before retrying a call that failed
// with err, backoff being its usual wait. When a breaker refused the call
// (an *OpenError in err's chain) the retry waits for it to half-open, if
// that is later: sooner would only spend a retry on a call that cannot go
// out. While a probe is out, Until is past and the backoff stands. The
// saga's step retries and the LLM client's retries both wait by it.
func RetryWait(backoff time.Duration, err error, now time.Time) time.Duration {
	var open *OpenError
	if errors.As(err, &open) {
		return max(backoff, open.Until.Sub(now))
	}
	return backoff
}

// Config tunes a Breaker. Zero values take the defaults.
type Config struct {
	Failures  int           // consecutive failed calls that open it, default 5
	OpenFor   time.Duration // then it half-opens, default 30s
	Successes int           // successful probes that close it, default 2
	Now       func() time.Time
}

// Config defaults.
const (
	FailuresDefault  = 5
	OpenForDefault   = 30 * time.Second
	SuccessesDefault = 2
)

// Breaker is one circuit. The zero value is not usable; call New.
type Breaker struct {
	cfg Config

	mu        sync.Mutex
	gen       uint64 // bumped at every opening and closing: late outcomes of older calls are ignored
	open      bool
	until     time.Time
	probing   bool
	failures  int
	successes int
}

// New returns a closed breaker.
func New(cfg Config) *Breaker {
	cfg.Failures = cmp.Or(max(cfg.Failures, 0), FailuresDefault)
	cfg.OpenFor = cmp.Or(max(cfg.OpenFor, 0), OpenForDefault)
	cfg.Successes = cmp.Or(max(cfg.Successes, 0), SuccessesDefault)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Breaker{cfg: cfg}
}

// Call is one call the breaker let through. Report its outcome once, with
// Done, or with Abandon when the caller gave up on its own (its context
// ended) and the call says nothing about the other side.
type Call struct {
	b     *Breaker
	gen   uint64
	probe bool
}

// Allow lets a call through, or refuses it with an *OpenError.
func (b *Breaker) Allow() (Call, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return Call{b: b, gen: b.gen}, nil
	}
	if b.probing || b.cfg.Now().Before(b.until) {
		return Call{}, &OpenError{Until: b.until}
	}
	b.probing = true // half-open: this call is the probe
	return Call{b: b, gen: b.gen, probe: true}, nil
}

// Done records the call's outcome.
func (c Call) Done(ok bool) {
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.gen != b.gen {
		return // started before the breaker last opened or closed
	}
	switch {
	case c.probe && ok:
		b.probing = false
		b.successes++
		if b.successes >= b.cfg.Successes {
			b.gen++
			b.open, b.failures, b.successes = false, 0, 0
		}
	case c.probe:
		b.reopen()
	case ok: // closed (an open breaker lets only probes through)
		b.failures = 0
	default:
		b.failures++
		if b.failures >= b.cfg.Failures {
			b.reopen()
		}
	}
}

// Abandon ends the call without a verdict; a probe's turn goes to the next
// caller.
func (c Call) Abandon() {
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.probe && c.gen == b.gen {
		b.probing = false
	}
}

func (b *Breaker) reopen() {
	b.gen++
	b.open, b.probing, b.successes = true, false, 0
	b.until = b.cfg.Now().Add(b.cfg.OpenFor)
}
