package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/workflow/task"
)

// StepRow is a step's persisted state.
type StepRow struct {
	Idx                 int
	Name                string
	State               string
	Attempt             int
	IdempotencyKey      string
	Output              json.RawMessage
	Error               *string
	StartedAt           *time.Time
	FinishedAt          *time.Time
	CompensationAttempt int
}

// StepInit is a step to create when a task first runs.
type StepInit struct {
	Idx            int
	Name           string
	IdempotencyKey string
}

// StepsInit creates a task's step rows if it has none yet, under lease
// token, and returns the rows as stored. Keys are stored before any action
// runs (invariant 4), so a resumed task reuses them.
func (s *Store) StepsInit(ctx context.Context, taskID, token string, steps []StepInit) ([]StepRow, error) {
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		if err := fence(ctx, tx, taskID, token); err != nil {
			return err
		}
		idx, names, keys := make([]int32, len(steps)), make([]string, len(steps)), make([]string, len(steps))
		for i, st := range steps {
			idx[i], names[i], keys[i] = int32(st.Idx), st.Name, st.IdempotencyKey
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO task_steps (task_id, idx, name, idempotency_key)
			SELECT $1, i, n, k FROM unnest($2::int[], $3::text[], $4::text[]) AS s(i, n, k)
			ON CONFLICT (task_id, idx) DO NOTHING`, taskID, idx, names, keys)
		return interpretError(err)
	})
	if err != nil {
		return nil, err
	}
	return s.StepList(ctx, taskID)
}

// StepList returns a task's steps in order (no team check: callers either
// hold the task's lease or checked access already).
func (s *Store) StepList(ctx context.Context, taskID string) ([]StepRow, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT idx, name, state, attempt, idempotency_key, output, error, started_at, finished_at, compensation_attempt
		FROM task_steps WHERE task_id = $1 ORDER BY idx`, taskID)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []StepRow
	for rows.Next() {
		var r StepRow
		var output []byte
		if err := rows.Scan(&r.Idx, &r.Name, &r.State, &r.Attempt, &r.IdempotencyKey, &output, &r.Error,
			&r.StartedAt, &r.FinishedAt, &r.CompensationAttempt); err != nil {
			return nil, interpretError(err)
		}
		if len(output) > 0 {
			r.Output = output
		}
		out = append(out, r)
	}
	return out, interpretError(rows.Err())
}

// StepWrite is one fenced change to a step (and optionally its task).
type StepWrite struct {
	Idx   int    // 0: no step change (task state and events only)
	State string // new step state
	// Start marks the step running: attempt + 1, started_at = now.
	Start bool
	// StartCompensation: compensation_attempt + 1.
	StartCompensation bool
	// Finish sets finished_at (forward steps) or compensated_at.
	Finish    bool
	Output    json.RawMessage
	Error     *string
	TaskState task.State // "" keeps the task's state
	Events    []task.Event
}

// StepWrite applies w under the task's lease token, with its events, in one
// transaction: a stale owner changes nothing and gets ErrLeaseLost.
func (s *Store) StepWrite(ctx context.Context, taskID, token string, w StepWrite) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		done := 0
		for _, e := range w.Events {
			if e.Type == task.EventStepCompleted {
				done++
			}
		}
		total := 0
		for _, e := range w.Events {
			total = max(total, e.TotalStep)
		}
		var last int
		err := tx.QueryRow(ctx, `
			UPDATE tasks SET
				state = COALESCE(NULLIF($3, ''), state),
				last_seq = last_seq + $4,
				progress_step = progress_step + $5,
				progress_total = GREATEST(progress_total, $6)
			WHERE id = $1 AND lease_token = $2
			RETURNING last_seq`, taskID, token, string(w.TaskState), len(w.Events), done, total).Scan(&last)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrLeaseLost
		}
		if err != nil {
			return interpretError(err)
		}
		if w.Idx > 0 {
			tag, err := tx.Exec(ctx, `
				UPDATE task_steps SET
					state = $3,
					attempt = attempt + CASE WHEN $4 THEN 1 ELSE 0 END,
					started_at = CASE WHEN $4 THEN now() ELSE started_at END,
					compensation_attempt = compensation_attempt + CASE WHEN $5 THEN 1 ELSE 0 END,
					finished_at = CASE WHEN $6 AND NOT $7 THEN now() ELSE finished_at END,
					compensated_at = CASE WHEN $6 AND $7 THEN now() ELSE compensated_at END,
					output = COALESCE($8, output),
					error = CASE WHEN $4 THEN NULL ELSE COALESCE($9, error) END
				WHERE task_id = $1 AND idx = $2`,
				taskID, w.Idx, w.State, w.Start, w.StartCompensation, w.Finish,
				w.State == "compensated" || w.State == "compensation_failed", nullJSON(w.Output), w.Error)
			if err != nil {
				return interpretError(err)
			}
			if tag.RowsAffected() == 0 {
				return fmt.Errorf("%w: no step %d", ErrNotFound, w.Idx)
			}
		}
		return insertEvents(ctx, tx, taskID, last-len(w.Events)+1, w.Events)
	})
}

// fence locks the task row if token still holds it.
func fence(ctx context.Context, tx pgx.Tx, taskID, token string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM tasks WHERE id = $1 AND lease_token = $2 FOR UPDATE`, taskID, token).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrLeaseLost
	}
	return interpretError(err)
}

// TaskSteps loads the steps of a visible task for the API (team-scoped).
func (s *Store) TaskSteps(ctx context.Context, teamIDs []string, taskID string) ([]task.Step, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT s.idx, s.name, s.state, s.attempt, s.started_at, s.finished_at, s.error
		FROM task_steps s JOIN tasks t ON t.id = s.task_id
		WHERE s.task_id = $1 AND t.team_id = ANY($2) ORDER BY s.idx`, taskID, teamIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []task.Step{}
	for rows.Next() {
		var st task.Step
		if err := rows.Scan(&st.Index, &st.Name, &st.State, &st.Attempt, &st.StartedAt, &st.FinishedAt, &st.Error); err != nil {
			return nil, interpretError(err)
		}
		st.Artifacts = []string{}
		out = append(out, st)
	}
	return out, interpretError(rows.Err())
}
