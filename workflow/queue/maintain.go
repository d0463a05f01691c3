package queue

import (
	"context"
	"time"

	"flightdeck/store"
)

// heartbeat renews the leases of running tasks every Lease/3 and acts on
// what it learns: a lost lease stops the job without writes, a cancel or a
// passed deadline interrupts it. This is also the backup path for cancels
// whose NOTIFY was lost.
func (p *Pool) heartbeat(ctx context.Context) {
	tick := time.NewTicker(p.cfg.Lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p.mu.Lock()
		leases := make([]store.Lease, 0, len(p.running))
		for _, j := range p.running {
			leases = append(leases, store.Lease{ID: j.Task.ID, Token: j.Task.LeaseToken})
		}
		p.mu.Unlock()
		sts, err := p.store.TaskHeartbeat(ctx, leases, p.cfg.Lease)
		if err != nil {
			p.logger.Warn("Heartbeat failed", "error", err)
			continue
		}
		alive := make(map[string]store.LeaseStatus, len(sts))
		for _, st := range sts {
			alive[st.ID] = st
		}
		for _, l := range leases {
			st, ok := alive[l.ID]
			switch {
			case !ok:
				p.interrupt(l.ID, ErrLeaseLost)
			case st.CancelRequested:
				p.interrupt(l.ID, ErrCancelRequested)
			case st.DeadlinePassed:
				p.interrupt(l.ID, ErrDeadline)
			}
		}
		if err := p.store.WorkerHeartbeat(ctx, p.cfg.ID, p.Busy(), 10*p.cfg.Lease); err != nil {
			p.logger.Warn("Worker heartbeat failed", "error", err)
		}
	}
}

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
