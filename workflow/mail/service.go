// Package mail tells people by email when a task needs them or ended badly
// (contract §12). Like the webhooks (workflow/webhook, its model) it rides
// the outbox after commit: a dispatcher follows the committed events by
// cursor and enqueues one email per person and event (a unique key makes a
// second enqueue nothing), and a sender claims due emails and hands them
// to the SMTP server, retrying with backoff for 24 h. Nothing here runs in
// a task's or a page's path: a mail server that is down delays email only.
package mail

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"flightdeck/internal/notify"
	"flightdeck/store"
	"flightdeck/workflow/event"
	"flightdeck/workflow/pipeline"
)

// Defaults of Config.
const (
	TimeoutDefault     = 30 * time.Second
	PollDefault        = time.Second
	ConcurrencyDefault = 4
)

// Config tunes the mail service. Zero values take the defaults.
type Config struct {
	Server      Server
	Schedule    Schedule
	Timeout     time.Duration // one attempt, connect to QUIT: a hanging server is given up on
	Poll        time.Duration
	Concurrency int
	BaseURL     string            // links: BaseURL + /tasks/<id> or /approvals
	Pipelines   *pipeline.Catalog // names a deploy's target and version (nil: pipeline name only)
	Logger      *slog.Logger
	Now         func() time.Time // the emails' "in 59 minutes" (tests)
}

// Service runs the dispatcher and the sender. Several processes may run it
// against one database.
type Service struct {
	st   *store.Store
	hub  *notify.Hub
	cfg  Config
	disp *dispatcher
	send *sender
}

// New returns the service; hub (may be nil) wakes the dispatcher on new events.
func New(st *store.Store, hub *notify.Hub, cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = PollDefault
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = TimeoutDefault
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = ConcurrencyDefault
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Service{st: st, hub: hub, cfg: cfg}
	s.send = &sender{st: st, srv: cfg.Server, schedule: cfg.Schedule.withDefaults(), timeout: cfg.Timeout,
		poll: cfg.Poll, slots: make(chan struct{}, cfg.Concurrency), wake: make(chan struct{}, 1), logger: cfg.Logger}
	s.disp = &dispatcher{st: st, pipes: cfg.Pipelines, base: strings.TrimRight(cfg.BaseURL, "/"), logger: cfg.Logger,
		wake: s.send.Wake, now: cfg.Now}
	return s
}

// Run runs until ctx ends and the attempts in flight have returned.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = event.RunConsumer(ctx, s.st, s.hub, s.disp.consumer(s.cfg.Poll)) }()
	go func() { defer wg.Done(); s.send.run(ctx) }()
	wg.Wait()
	return ctx.Err()
}
