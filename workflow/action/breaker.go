package action

import (
	"cmp"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrCircuitOpen: calls to the host fail fast until the breaker half-opens.
var ErrCircuitOpen = errors.New("circuit_open")

// CircuitOpenError says which host and until when.
type CircuitOpenError struct {
	Host  string
	Until time.Time
}

func (e *CircuitOpenError) Error() string {
	return fmt.Sprintf("circuit_open: %s failed repeatedly; next probe after %s", e.Host, e.Until.UTC().Format(time.RFC3339))
}

func (e *CircuitOpenError) Unwrap() error { return ErrCircuitOpen }

// BreakerConfig tunes Breakers; zero values are the contract's defaults.
type BreakerConfig struct {
	FailureThreshold int           // consecutive failures that open it, default 5
	OpenFor          time.Duration // then half-open, default 30s
	SuccessThreshold int           // probe successes that close it, default 2
	Now              func() time.Time
}

// Breakers keeps one circuit breaker per host.
type Breakers struct {
	cfg   BreakerConfig
	mu    sync.Mutex
	hosts map[string]*breaker
}

type breaker struct {
	failures, successes int
	openUntil           time.Time
	open, probing       bool
}

// NewBreakers returns breakers with cfg.
func NewBreakers(cfg BreakerConfig) *Breakers {
	cfg.FailureThreshold = cmp.Or(cfg.FailureThreshold, 5)
	cfg.OpenFor = cmp.Or(cfg.OpenFor, 30*time.Second)
	cfg.SuccessThreshold = cmp.Or(cfg.SuccessThreshold, 2)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Breakers{cfg: cfg, hosts: map[string]*breaker{}}
}

// Allow asks to call host: nil, or a *CircuitOpenError while open (and while
// a half-open probe is already out).
func (b *Breakers) Allow(host string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.get(host)
	if !br.open {
		return nil
	}
	if b.cfg.Now().Before(br.openUntil) || br.probing {
		return &CircuitOpenError{Host: host, Until: br.openUntil}
	}
	br.probing = true // half-open: this call is the probe
	return nil
}

// Done records a call's outcome.
func (b *Breakers) Done(host string, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.get(host)
	switch {
	case br.open && ok:
		br.probing = false
		br.successes++
		if br.successes >= b.cfg.SuccessThreshold {
			*br = breaker{}
		}
	case br.open:
		br.probing, br.successes = false, 0
		br.openUntil = b.cfg.Now().Add(b.cfg.OpenFor)
	case ok:
		br.failures = 0
	default:
		br.failures++
		if br.failures >= b.cfg.FailureThreshold {
			br.open, br.openUntil = true, b.cfg.Now().Add(b.cfg.OpenFor)
		}
	}
}

func (b *Breakers) get(host string) *breaker {
	br := b.hosts[host]
	if br == nil {
		br = &breaker{}
		b.hosts[host] = br
	}
	return br
}
