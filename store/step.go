package store

import (
	"context"
	"encoding/json"
	"time"

	"flightdeck/workflow/task"
)

// StepRow is a step's persisted state: a task_steps row, scanned by
// column name (SELECT *: a new column is a field here).
type StepRow struct {
	TaskID              string          `json:"-" db:"task_id"`
	Idx                 int             `json:"idx" db:"idx"`
	Name                string          `json:"name" db:"name"`
	State               task.StepState  `json:"state" db:"state"`
	Attempt             int             `json:"attempt" db:"attempt"`
	IdempotencyKey      string          `json:"idempotency_key" db:"idempotency_key"`
	Output              json.RawMessage `json:"output" db:"output"`
	Error               *string         `json:"error" db:"error"`
	StartedAt           *time.Time      `json:"started_at" db:"started_at"`
	FinishedAt          *time.Time      `json:"finished_at" db:"finished_at"`
	CompensationAttempt int             `json:"compensation_attempt" db:"compensation_attempt"`
	CompensatedAt       *time.Time      `json:"compensated_at" db:"compensated_at"` // when its undo ended (undone or failed for good)
}

// StepList returns a task's steps in order (no team check: callers either
// hold the task's lease or checked access already).
func (s *Store) StepList(ctx context.Context, taskID string) ([]StepRow, error) {
	return byName[StepRow](s.pool.Query(ctx, `SELECT * FROM task_steps WHERE task_id = $1 ORDER BY idx`, taskID))
}

// StepSave is a step row as its worker holds it, written whole with the
// task's next write (TaskWrite): inserted when new, replaced otherwise. The
// worker is the only writer of its task's step rows while it holds the
// lease, so its copy is the row.
type StepSave struct {
	Idx                 int
	Name                string
	IdempotencyKey      string
	State               task.StepState
	Attempt             int
	CompensationAttempt int
	Output              json.RawMessage
	Error               *string
	// StartedAt, FinishedAt and CompensatedAt are when the worker saw the
	// step start (its first attempt), end and be undone. The worker's
	// clock, not the write's: writes are batched, so the database's now()
	// would be up to a flush late and give a fast step no duration. A save
	// is the whole row (the saga's run keeps it, runner.go apply): what it
	// leaves nil is stored nil.
	StartedAt, FinishedAt, CompensatedAt *time.Time
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

// TaskSkippedSteps counts the skipped steps of the given tasks that
// completed (a person skipped a failed step, or a step's condition left
// it out), for "completed with 1 step skipped"; tasks with none are not
// in the map. The ids come from a team-scoped read already.
func (s *Store) TaskSkippedSteps(ctx context.Context, ids []string) (map[string]int, error) {
	out := map[string]int{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT s.task_id::text, count(*)::int FROM task_steps s JOIN tasks t ON t.id = s.task_id
		WHERE s.task_id = ANY($1::uuid[]) AND s.state = 'skipped' AND t.state = 'completed'
		GROUP BY s.task_id`, ids)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, interpretError(err)
		}
		out[id] = n
	}
	return out, interpretError(rows.Err())
}
