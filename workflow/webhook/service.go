package webhook

import (
	"context"
	"flightdeck/internal/notify"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"flightdeck/store"
	"flightdeck/workflow/event"
	"flightdeck/workflow/pipeline"
)

// Defaults of Config.
const (
	TimeoutDefault     = 10 * time.Second
	PollDefault        = time.Second
	ConcurrencyDefault = 8
)

// Config tunes the webhook service. Zero values take the defaults.
type Config struct {
	Guard       *Guard        // required: the SSRF guard every request dials through
	Schedule    Schedule      // retry backoff
	Timeout     time.Duration // per attempt, default 10s
	Poll        time.Duration // outbox and due-delivery poll, default 1s
	Concurrency int           // requests in flight per process, default 8
	Logger      *slog.Logger
	// Pipelines and BaseURL shape chat messages (format slack): the
	// target and version of a deploy, the link to act on.
	Pipelines *pipeline.Catalog
	BaseURL   string
}

// Service runs the dispatcher (outbox → deliveries) and the sender (due
// deliveries → HTTP). Several processes may run it against one database.
type Service struct {
	st     *store.Store
	hub    *notify.Hub
	cfg    Config
	logger *slog.Logger
	disp   *dispatcher
	send   *Sender
}

// New returns the service; hub (may be nil) wakes the dispatcher on new
// events.
func New(st *store.Store, hub *notify.Hub, cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = PollDefault
	}
	s := &Service{st: st, hub: hub, cfg: cfg, logger: cfg.Logger}
	s.send = NewSender(st, cfg)
	s.disp = &dispatcher{st: st, logger: cfg.Logger, wake: s.send.Wake, pipes: cfg.Pipelines, base: strings.TrimRight(cfg.BaseURL, "/")}
	return s
}

// Run runs until ctx ends and the requests in flight have returned.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = event.RunConsumer(ctx, s.st, s.hub, s.disp.consumer(s.cfg)) }()
	go func() { defer wg.Done(); _ = s.send.Run(ctx) }()
	wg.Wait()
	return ctx.Err()
}

// NewClient returns the HTTP client deliveries use: every connection dialled
// through the guard, no proxy, redirects never followed (the 3xx answer is
// the outcome), bounded by timeout.
func NewClient(g *Guard, timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = TimeoutDefault
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil, // a proxy would dial for us, past the guard
			DialContext:           g.DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       30 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
