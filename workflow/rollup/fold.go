package rollup

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"flightdeck/store"
)

// Defaults for FoldConfig's zero values.
const (
	FoldIntervalDefault = 250 * time.Millisecond
	FoldBatchDefault    = 2000
)

// FoldConfig tunes a Folder. Zero values mean the defaults.
type FoldConfig struct {
	// Interval between folds when nothing wakes the folder: how far behind
	// the dashboards may be for tasks other processes end (this process's
	// own wake it at once).
	Interval time.Duration
	// MinGap is the least time between folds a wake-up starts (default
	// Interval/2): under load the writes that end tasks come every few
	// milliseconds, and a fold per write would cost more than it saves.
	MinGap time.Duration
	Batch  int // outbox rows per fold
	Logger *slog.Logger
	// FoldFunc, if set, is called after every fold (tests wait on it).
	FoldFunc func(store.RollupFolded, error)
}

// Folder is the maintenance loop that keeps the dashboard's derived state
// (store.RollupFoldOnce): every serve process runs one; the one that holds
// the fold's cursor folds, so several processes fold each task once.
type Folder struct {
	store *store.Store
	cfg   FoldConfig
}

// NewFolder returns a folder over st.
func NewFolder(st *store.Store, cfg FoldConfig) *Folder {
	cfg.Interval = cmp.Or(cfg.Interval, FoldIntervalDefault)
	cfg.Batch = cmp.Or(cfg.Batch, FoldBatchDefault)
	cfg.MinGap = cmp.Or(cfg.MinGap, cfg.Interval/2)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Folder{store: st, cfg: cfg}
}

// Run folds at once, then whenever this process ends tasks and at least
// every Interval, until ctx ends. A full batch is followed by the next at
// once (a backlog is worked off in batches); a failed fold is logged and
// tried again at the next tick.
func (f *Folder) Run(ctx context.Context) error {
	tick := time.NewTicker(f.cfg.Interval)
	defer tick.Stop()
	for {
		r, err := f.store.RollupFoldOnce(ctx, f.cfg.Batch)
		if err != nil && ctx.Err() == nil {
			f.cfg.Logger.Warn("Rollup fold failed", "error", err)
		}
		if f.cfg.FoldFunc != nil {
			f.cfg.FoldFunc(r, err)
		}
		if err == nil && r.Scanned >= f.cfg.Batch {
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		gap := time.NewTimer(f.cfg.MinGap)
		select {
		case <-ctx.Done():
			gap.Stop()
			return nil
		case <-gap.C:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-f.store.RollupFoldWake():
		}
	}
}
