package action

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"flightdeck/internal/breaker"
	"flightdeck/internal/words"
)

// ErrCircuitOpen: calls to the host fail fast until the breaker half-opens.
var ErrCircuitOpen = errors.New("circuit_open")

// CircuitOpenError says which host and until when; a step's retry waits
// until then (contract §6).
type CircuitOpenError struct {
	Host  string
	Until time.Time
}

func (e *CircuitOpenError) Error() string {
	return fmt.Sprintf("circuit_open: %s failed repeatedly; next probe after %s", e.Host, words.Stamp(e.Until))
}

// Unwrap gives ErrCircuitOpen and the breaker's refusal, which says when
// a retry may go out (breaker.RetryWait).
func (e *CircuitOpenError) Unwrap() []error {
	return []error{ErrCircuitOpen, &breaker.OpenError{Until: e.Until}}
}

// Breakers keeps one circuit breaker per host; zero config values are the
// contract's defaults (open after 5 consecutive failures, half-open after
// 30 s with one probe, closed after 2 successes).
type Breakers struct {
	cfg   breaker.Config
	mu    sync.Mutex
	hosts map[string]*breaker.Breaker
}

// NewBreakers returns breakers with cfg.
func NewBreakers(cfg breaker.Config) *Breakers {
	return &Breakers{cfg: cfg, hosts: map[string]*breaker.Breaker{}}
}

// Allow asks to call host: the call to report on, or a *CircuitOpenError
// while open (and while a half-open probe is already out).
func (b *Breakers) Allow(host string) (breaker.Call, error) {
	b.mu.Lock()
	br := b.hosts[host]
	if br == nil {
		br = breaker.New(b.cfg)
		b.hosts[host] = br
	}
	b.mu.Unlock()
	call, err := br.Allow()
	var open *breaker.OpenError
	if errors.As(err, &open) {
		return call, &CircuitOpenError{Host: host, Until: open.Until}
	}
	return call, err
}
