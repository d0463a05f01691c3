package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"flightdeck/workflow/task"
)

var (
	// ErrQueueFull: the team has as many pending tasks as it may.
	ErrQueueFull = errors.New("queue full")
	// ErrIdempotencyConflict: the key was used before with another body.
	ErrIdempotencyConflict = errors.New("idempotency key reused with a different request")
)

// TaskInsertParams are the inputs of TaskInsert.
type TaskInsertParams struct {
	TeamID          string
	CreatedByID     string
	Kind            task.Kind
	Pipeline        string
	Params          json.RawMessage
	Prompt          string
	Priority        task.Priority
	MaxAttempts     int
	DeadlineSeconds int             // 0: no deadline
	IdempotencyKey  string          // "" for none
	RequestHash     []byte          // hash of the request body, to tell a replay from a reuse
	MaxPending      int             // the team's bound on pending tasks; 0: unbounded
	Webhook         json.RawMessage // nil for none
}

// TaskInsert accepts a task: the row, its first event and the workers'
// wake-up are committed together, so a caller that got a task back can rely
// on it being durable (invariant 1). With an idempotency key already used by
// the team it returns the earlier task and created=false when the request
// hash matches, ErrIdempotencyConflict when it does not.
func (s *Store) TaskInsert(ctx context.Context, p TaskInsertParams) (t *task.Task, created bool, err error) {
	var id string
	err = s.withTx(ctx, func(tx pgx.Tx) error {
		// One submitter per team at a time: the pending bound is then exact,
		// and concurrent uses of one idempotency key queue up behind the first.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1::text, 7))`, p.TeamID); err != nil {
			return interpretError(err)
		}
		if p.IdempotencyKey != "" {
			var prevID string
			var prevHash []byte
			err := tx.QueryRow(ctx, `SELECT id, request_hash FROM tasks WHERE team_id = $1 AND idempotency_key = $2`,
				p.TeamID, p.IdempotencyKey).Scan(&prevID, &prevHash)
			switch {
			case err == nil:
				if !bytes.Equal(prevHash, p.RequestHash) {
					return ErrIdempotencyConflict
				}
				id = prevID
				return nil
			case !errors.Is(err, pgx.ErrNoRows):
				return interpretError(err)
			}
		}
		if p.MaxPending > 0 {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM tasks WHERE team_id = $1 AND state = 'pending' LIMIT $2) x`,
				p.TeamID, p.MaxPending).Scan(&n); err != nil {
				return interpretError(err)
			}
			if n >= p.MaxPending {
				return ErrQueueFull
			}
		}
		params := p.Params
		if len(params) == 0 {
			params = json.RawMessage(`{}`)
		}
		maxAttempts := p.MaxAttempts
		if maxAttempts == 0 {
			maxAttempts = 5
		}
		err := tx.QueryRow(ctx, `
			WITH ins AS (
				INSERT INTO tasks (team_id, created_by, kind, pipeline, params, prompt, priority, max_attempts,
					deadline_at, idempotency_key, request_hash, webhook, last_seq)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8,
					CASE WHEN $9 > 0 THEN now() + make_interval(secs => $9) END, NULLIF($10, ''), $11, $12, 1)
				RETURNING id
			), ev AS (
				INSERT INTO task_events (task_id, seq, type, status, message, data)
				SELECT id, 1, 'task.state', 'log', 'Task submitted', '{"state":"pending"}' FROM ins
			)
			SELECT id FROM ins`,
			p.TeamID, p.CreatedByID, string(p.Kind), p.Pipeline, []byte(params), p.Prompt, int16(p.Priority), maxAttempts,
			p.DeadlineSeconds, p.IdempotencyKey, p.RequestHash, nullJSON(p.Webhook)).Scan(&id)
		if err != nil {
			return interpretError(err)
		}
		created = true
		// NOTIFY is only a wake-up (invariant 3): delivered at commit, and a
		// lost one costs a poll interval, never the task.
		_, err = tx.Exec(ctx, `SELECT pg_notify('task_ready', ''), pg_notify('task_events', $1::text || ':1')`, id)
		return interpretError(err)
	})
	if err != nil {
		return nil, false, err
	}
	t, err = s.TaskGet(ctx, []string{p.TeamID}, id)
	return t, created, err
}

// TaskInsertMany inserts many tasks of one team in one statement, each with
// its first event, and wakes the workers once (benchmarks, bulk loads). No
// pending bound or idempotency keys.
func (s *Store) TaskInsertMany(ctx context.Context, teamID, createdByID string, kind task.Kind, pipeline string, n int) error {
	_, err := s.pool.Exec(ctx, `
		WITH ins AS (
			INSERT INTO tasks (team_id, created_by, kind, pipeline, last_seq)
			SELECT $1, $2, $3, $4, 1 FROM generate_series(1, $5)
			RETURNING id
		), ev AS (
			INSERT INTO task_events (task_id, seq, type, status, message, data)
			SELECT id, 1, 'task.state', 'log', 'Task submitted', '{"state":"pending"}' FROM ins
		)
		SELECT pg_notify('task_ready', '') FROM (SELECT count(*) FROM ins) x`,
		teamID, createdByID, string(kind), pipeline, n)
	if err != nil {
		return fmt.Errorf("error inserting tasks: %w", interpretError(err))
	}
	return nil
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}
