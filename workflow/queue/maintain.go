package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

// sweepLimit bounds how many tasks one sweep decides (the rest wait for
// the next tick).
const sweepLimit = 1000

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
		n, err := p.store.TaskRescue(ctx, sweepLimit, Rescue)
		if err != nil {
			p.logger.Warn("Rescue failed", "error", err)
			continue
		}
		if n > 0 {
			p.logger.Info("Re-queued tasks whose worker was lost", "tasks", n)
		}
		if _, err := p.store.TaskCancelStanding(ctx, nil, sweepLimit); err != nil {
			p.logger.Warn("Applying standing cancels failed", "error", err)
		}
		if _, err := p.store.TaskDeadlineSweep(ctx, sweepLimit, DeadlinePassed); err != nil {
			p.logger.Warn("Deadline sweep failed", "error", err)
		}
		if err := p.store.TaskMaintain(ctx, p.cfg.IdempotencyTTL); err != nil {
			p.logger.Warn("Maintenance failed", "error", err)
		}
	}
}

// liveness re-queues, every LivenessInterval, the tasks of workers whose
// process died, told by their liveness lock being free (store.TaskRescueDead):
// seconds instead of a lease. It also keeps this worker's own lock: a
// database restart ends its session, and a new one is taken and recorded.
// It returns the hold it ends with, for Run to release.
func (p *Pool) liveness(ctx context.Context, hold *store.Liveness) *store.Liveness {
	tick := time.NewTicker(p.cfg.LivenessInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return hold
		case <-tick.C:
		}
		n, err := p.store.TaskRescueDead(ctx, p.cfg.ID, p.cfg.Lease, sweepLimit, Rescue)
		if err != nil {
			p.logger.Warn("Looking for dead workers failed", "error", err)
			continue
		}
		if n > 0 {
			p.logger.Info("Re-queued tasks of a worker that died", "tasks", n)
		}
		if hold != nil && hold.Alive(ctx) {
			continue
		}
		if hold != nil {
			_ = hold.Close(ctx)
			hold = nil
		}
		if h, err := p.store.WorkerHold(ctx); err == nil {
			if err := p.store.WorkerSetLock(ctx, p.cfg.ID, h.Key()); err != nil {
				_ = h.Close(ctx)
				continue
			}
			hold = h
		}
	}
}

// Rescue decides what becomes of a task whose worker was lost: the lost
// run counts as an attempt; a compensating task goes on compensating (its
// undo must finish whatever the count), any other starts again while
// attempts last and fails once they are used up.
func Rescue(t store.Stale) store.TaskWrite {
	w := store.TaskWrite{ID: t.ID, Token: t.Token, Release: true, BumpAttempt: true}
	attempt := t.Attempt + 1
	data := func(s task.State) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"state": s, "attempt": attempt})
		return b
	}
	switch {
	case t.State == task.StateCompensating:
		w.State = task.StateCompensating
	case t.Attempt >= t.MaxAttempts:
		w.State = task.StateFailed
		msg := fmt.Sprintf("worker lost %d time(s); max_attempts reached", t.Attempt)
		w.Error = &msg
		w.Events = []task.Event{
			{Type: task.EventTaskState, Status: task.StatusLog, Message: "Worker lost; no attempts left", Data: data(w.State)},
			{Type: task.EventTaskFailed, Status: task.StatusError, Message: "Task failed: worker lost too many times", Data: data(w.State)},
		}
		return w
	default:
		w.State = task.StatePending
	}
	w.Events = []task.Event{{Type: task.EventTaskState, Status: task.StatusLog, Message: "Worker lost; queued again", Data: data(w.State)}}
	return w
}

// DeadlinePassed fails a task whose deadline passed before it started.
func DeadlinePassed(t store.Stale) store.TaskWrite {
	msg := "deadline passed before the task started"
	data, _ := json.Marshal(map[string]any{"state": task.StateFailed})
	return store.TaskWrite{ID: t.ID, State: task.StateFailed, Error: &msg,
		Events: []task.Event{{Type: task.EventTaskFailed, Status: task.StatusError, Message: "Task failed: " + msg, Data: data}}}
}
