package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/workflow/task"
)

// WorkerRegister records a worker process (dashboard, lease owner names)
// and the key of the liveness lock it holds (WorkerHold; nil: none, only
// its leases' expiry tells its death).
func (s *Store) WorkerRegister(ctx context.Context, id, host string, pid, slots int, lockKey *int32) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO workers (id, host, pid, slots, lock_key) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), slots = EXCLUDED.slots, lock_key = EXCLUDED.lock_key`, id, host, pid, slots, lockKey)
	return interpretError(err)
}

// WorkerHeartbeat marks a worker alive with its busy slot count, and forgets
// workers silent for longer than forget.
func (s *Store) WorkerHeartbeat(ctx context.Context, id string, busy int, forget time.Duration) error {
	_, err := s.pool.Exec(ctx, `UPDATE workers SET heartbeat_at = now(), busy = $2 WHERE id = $1`, id, busy)
	if err != nil {
		return interpretError(err)
	}
	_, err = s.pool.Exec(ctx, `DELETE FROM workers WHERE heartbeat_at < now() - make_interval(secs => $1)`, forget.Seconds())
	return interpretError(err)
}

// WorkerDelete removes a worker that stopped cleanly.
func (s *Store) WorkerDelete(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM workers WHERE id = $1`, id)
	return interpretError(err)
}

// Worker is a row of the workers table.
type Worker struct {
	ID          string
	Host        string
	PID         int
	Slots, Busy int
	StartedAt   time.Time
	HeartbeatAt time.Time
}

// WorkerList lists live workers.
func (s *Store) WorkerList(ctx context.Context) ([]Worker, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, host, pid, slots, busy, started_at, heartbeat_at FROM workers ORDER BY started_at`)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []Worker
	for rows.Next() {
		var w Worker
		if err := rows.Scan(&w.ID, &w.Host, &w.PID, &w.Slots, &w.Busy, &w.StartedAt, &w.HeartbeatAt); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, w)
	}
	return out, interpretError(rows.Err())
}

// TaskMaintain does the periodic housekeeping any node may do: promote
// scheduled tasks whose time came, expire approvals past their time, roll
// back overdue failed-step decisions, and forget idempotency keys older
// than keyTTL.
func (s *Store) TaskMaintain(ctx context.Context, keyTTL time.Duration) error {
	if err := s.taskPromote(ctx); err != nil {
		return err
	}
	if _, err := s.ApprovalExpire(ctx); err != nil {
		return err
	}
	if _, err := s.TaskDecisionExpire(ctx); err != nil {
		return err
	}
	// Forgetting a key is retention, not a change of the task: nothing a
	// client sees moves, so no event (the one UPDATE of tasks besides
	// taskApply, the claim and the heartbeat; TestOneWritePath).
	_, err := s.pool.Exec(ctx, `
		UPDATE tasks SET idempotency_key = NULL
		WHERE id IN (SELECT id FROM tasks WHERE idempotency_key IS NOT NULL AND created_at < now() - make_interval(secs => $1) LIMIT 1000)`,
		keyTTL.Seconds())
	return interpretError(err)
}

// taskPromote moves scheduled tasks whose time came to pending, through
// the one write path with their event (invariant 6), locked and skipped by
// a concurrent promoter.
func (s *Store) taskPromote(ctx context.Context) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT id::text AS id, run_after FROM tasks WHERE state = 'scheduled' AND GREATEST(run_after, held_until) <= now()
			ORDER BY id LIMIT 1000 FOR UPDATE SKIP LOCKED`)
		if err != nil {
			return interpretError(err)
		}
		due, err := pgx.CollectRows(rows, pgx.RowToStructByName[dueRow])
		if err != nil || len(due) == 0 {
			return interpretError(err)
		}
		data, _ := json.Marshal(map[string]any{"state": task.StatePending})
		ws := make([]TaskWrite, len(due))
		for i, d := range due {
			// run_after stays: if a freeze holds the task when it is
			// claimed, its run_at is still the one it was asked for
			ws[i] = TaskWrite{ID: d.ID, State: task.StatePending, Release: true, RunAfter: d.RunAfter, Events: []task.Event{
				{Type: task.EventTaskState, Status: task.StatusLog, Message: "Task pending: its time came", Data: data}}}
		}
		if _, err := taskApplyTx(ctx, tx, ws...); err != nil {
			return err
		}
		noteTx(tx, readyNote)
		return nil
	})
}

type dueRow struct {
	ID       string     `db:"id"`
	RunAfter *time.Time `db:"run_after"`
}
