package store

import (
	"context"
	"time"
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
	var promoted int
	err := s.pool.QueryRow(ctx, `
		WITH promoted AS (
			UPDATE tasks SET state = 'pending', run_after = NULL
			WHERE id IN (SELECT id FROM tasks WHERE state = 'scheduled' AND run_after <= now() LIMIT 1000 FOR UPDATE SKIP LOCKED)
			RETURNING id
		)
		SELECT count(*) FROM promoted`).Scan(&promoted)
	if err != nil {
		return interpretError(err)
	}
	if promoted > 0 {
		s.wake.Send(readyNote)
	}
	if _, err := s.ApprovalExpire(ctx); err != nil {
		return err
	}
	if _, err := s.TaskDecisionExpire(ctx); err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `
		UPDATE tasks SET idempotency_key = NULL
		WHERE id IN (SELECT id FROM tasks WHERE idempotency_key IS NOT NULL AND created_at < now() - make_interval(secs => $1) LIMIT 1000)`,
		keyTTL.Seconds())
	return interpretError(err)
}
