// Package retention deletes what flightdeck keeps only for a while: webhook
// deliveries and emails that ended (the delivery logs), the local provider's effect
// records once the task they belong to can no longer run, and the
// dashboard's per-minute counts older than a day. Every serve
// process runs one Cleaner. Each pass deletes in small batches (one short
// statement each, SKIP LOCKED), so it never holds many locks
// for long, and several processes pruning at once split the rows between
// them instead of waiting on each other.
package retention

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"flightdeck/store"
)

// Defaults for Config's zero values.
const (
	IntervalDefault          = 10 * time.Minute
	WebhookDeliveriesDefault = 7 * 24 * time.Hour
	LocalEffectsDefault      = 7 * 24 * time.Hour
	BatchDefault             = 1000
	// MaxBatchesDefault bounds one pass per table; a larger backlog is
	// worked off over the following passes.
	MaxBatchesDefault = 100
)

// Config tunes a Cleaner. Zero values mean the defaults.
type Config struct {
	Interval          time.Duration // between passes, default 10m
	WebhookDeliveries time.Duration // keep ended deliveries this long, default 7 days
	LocalEffects      time.Duration // keep effects this long after their task ended, default 7 days
	Batch             int           // rows per delete statement, default 1000
	MaxBatches        int           // statements per table per pass, default 100
	Logger            *slog.Logger
	// PassFunc, if set, is called after every pass of Run (tests wait on it).
	PassFunc func(Result, error)
}

// Cleaner runs the retention passes.
type Cleaner struct {
	store *store.Store
	cfg   Config
}

// New returns a cleaner over st.
func New(st *store.Store, cfg Config) *Cleaner {
	cfg.Interval = cmp.Or(cfg.Interval, IntervalDefault)
	cfg.WebhookDeliveries = cmp.Or(cfg.WebhookDeliveries, WebhookDeliveriesDefault)
	cfg.LocalEffects = cmp.Or(cfg.LocalEffects, LocalEffectsDefault)
	cfg.Batch = cmp.Or(cfg.Batch, BatchDefault)
	cfg.MaxBatches = cmp.Or(cfg.MaxBatches, MaxBatchesDefault)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Cleaner{store: st, cfg: cfg}
}

// Run makes a pass at once and then every Interval until ctx ends. A failed
// pass is logged and tried again at the next interval.
func (c *Cleaner) Run(ctx context.Context) error {
	tick := time.NewTicker(c.cfg.Interval)
	defer tick.Stop()
	for {
		r, err := c.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("Retention pass failed", "error", err)
		}
		if c.cfg.PassFunc != nil {
			c.cfg.PassFunc(r, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Result counts the rows one pass deleted.
type Result struct {
	WebhookDeliveries int
	MailDeliveries    int // emails that ended, kept as long as webhook deliveries
	LocalEffects      int
	TaskMinutes       int
}

// RunOnce makes one pass over every table.
func (c *Cleaner) RunOnce(ctx context.Context) (Result, error) {
	var r Result
	var err error
	r.WebhookDeliveries, err = c.prune(ctx, func(ctx context.Context) (int, error) {
		return c.store.WebhookDeliveryPrune(ctx, c.cfg.WebhookDeliveries, c.cfg.Batch)
	})
	if err != nil {
		return r, err
	}
	r.MailDeliveries, err = c.prune(ctx, func(ctx context.Context) (int, error) {
		return c.store.MailDeliveryPrune(ctx, c.cfg.WebhookDeliveries, c.cfg.Batch)
	})
	if err != nil {
		return r, err
	}
	r.LocalEffects, err = c.prune(ctx, func(ctx context.Context) (int, error) {
		return c.store.LocalEffectPrune(ctx, c.cfg.LocalEffects, c.cfg.Batch)
	})
	if err != nil {
		return r, err
	}
	r.TaskMinutes, err = c.prune(ctx, func(ctx context.Context) (int, error) {
		return c.store.TaskMinutePrune(ctx, c.cfg.Batch)
	})
	if err != nil {
		return r, err
	}
	if r.WebhookDeliveries > 0 || r.MailDeliveries > 0 || r.LocalEffects > 0 || r.TaskMinutes > 0 {
		c.cfg.Logger.Info("Deleted expired records", "webhook_deliveries", r.WebhookDeliveries, "mail_deliveries", r.MailDeliveries, "local_effects", r.LocalEffects,
			"task_minutes", r.TaskMinutes)
	}
	return r, nil
}

// prune runs one batch statement until a batch comes back short (nothing
// more is due) or MaxBatches ran.
func (c *Cleaner) prune(ctx context.Context, batch func(context.Context) (int, error)) (int, error) {
	total := 0
	for range c.cfg.MaxBatches {
		n, err := batch(ctx)
		total += n
		if err != nil || n < c.cfg.Batch {
			return total, err
		}
	}
	return total, nil
}
