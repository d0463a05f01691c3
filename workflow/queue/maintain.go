package queue

import (
	"context"
	"time"
)

// rescuer re-queues tasks whose lease expired on any node, and does the
// periodic housekeeping (scheduled promotions, deadlines, old keys).
func (p *Pool) rescuer(ctx context.Context) {
	tick := time.NewTicker(p.cfg.RescueInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, err := p.store.TaskRescue(ctx, 1000)
		if err != nil {
			p.logger.Warn("Rescue failed", "error", err)
			continue
		}
		if n > 0 {
			p.logger.Info("Re-queued tasks whose worker was lost", "tasks", n)
		}
		if err := p.store.TaskMaintain(ctx, p.cfg.IdempotencyTTL); err != nil {
			p.logger.Warn("Maintenance failed", "error", err)
		}
	}
}
