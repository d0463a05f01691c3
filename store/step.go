package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
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
// runs (invariant 4), so a resumed task reuses them. One statement: the
// fence, the insert and the read travel together.
func (s *Store) StepsInit(ctx context.Context, taskID, token string, steps []StepInit) ([]StepRow, error) {
	idx, names, keys := make([]int32, len(steps)), make([]string, len(steps)), make([]string, len(steps))
	for i, st := range steps {
		idx[i], names[i], keys[i] = int32(st.Idx), st.Name, st.IdempotencyKey
	}
	rows, err := s.pool.Query(ctx, `
		WITH t AS (
			-- No row lock: keys are derived from task, step and inputs, so
			-- a racing new owner would insert the very same rows.
			SELECT id FROM tasks WHERE id = $1 AND lease_token = $2
		), ins AS (
			INSERT INTO task_steps (task_id, idx, name, idempotency_key)
			SELECT t.id, i, n, k FROM t, unnest($3::int[], $4::text[], $5::text[]) AS s(i, n, k)
			ON CONFLICT (task_id, idx) DO NOTHING
			RETURNING `+stepColumns+`
		)
		SELECT `+stepColumns+` FROM task_steps WHERE task_id = (SELECT id FROM t)
		UNION ALL SELECT * FROM ins
		UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE NOT EXISTS (SELECT 1 FROM t)`,
		taskID, token, idx, names, keys)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := scanSteps(rows)
	if err != nil {
		return nil, err
	}
	if len(out) == 1 && out[0].Idx == 0 {
		return nil, ErrLeaseLost
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Idx < out[k].Idx })
	return out, nil
}

const stepColumns = `idx, name, state, attempt, idempotency_key, output, error, started_at, finished_at, compensation_attempt`

// StepList returns a task's steps in order (no team check: callers either
// hold the task's lease or checked access already).
func (s *Store) StepList(ctx context.Context, taskID string) ([]StepRow, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+stepColumns+` FROM task_steps WHERE task_id = $1 ORDER BY idx`, taskID)
	if err != nil {
		return nil, interpretError(err)
	}
	return scanSteps(rows)
}

func scanSteps(rows pgx.Rows) ([]StepRow, error) {
	defer rows.Close()
	var out []StepRow
	for rows.Next() {
		var r StepRow
		var idx, attempt, compAttempt *int
		var name, state, key *string
		var output []byte
		if err := rows.Scan(&idx, &name, &state, &attempt, &key, &output, &r.Error,
			&r.StartedAt, &r.FinishedAt, &compAttempt); err != nil {
			return nil, interpretError(err)
		}
		if idx == nil { // the "lease lost" marker row
			out = append(out, StepRow{})
			continue
		}
		r.Idx, r.Name, r.State, r.Attempt, r.IdempotencyKey, r.CompensationAttempt = *idx, *name, *state, *attempt, *key, *compAttempt
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

// progressOf is what events add to a task's progress: the steps they
// complete, and the step total they report.
func progressOf(events []task.Event) (done, total int) {
	for _, e := range events {
		if e.Type == task.EventStepCompleted {
			done++
		}
		total = max(total, e.TotalStep)
	}
	return done, total
}

// StepWrite applies w under the task's lease token, with its events, in one
// statement (so one round trip and one commit): a stale owner changes
// nothing and gets ErrLeaseLost.
func (s *Store) StepWrite(ctx context.Context, taskID, token string, w StepWrite) error {
	done, total := progressOf(w.Events)
	compensationEnd := w.State == "compensated" || w.State == "compensation_failed"
	var fenced, lastSeq int
	err := s.pool.QueryRow(ctx, `
		WITH t AS (
			UPDATE tasks SET
				state = COALESCE(NULLIF($3, ''), state),
				last_seq = last_seq + $4,
				progress_step = progress_step + $5,
				progress_total = GREATEST(progress_total, $6)
			WHERE id = $1 AND lease_token = $2
			RETURNING id, last_seq, $4::int AS n, $15::text AS events
		), st AS (
			UPDATE task_steps SET
				state = $8,
				attempt = attempt + CASE WHEN $9 THEN 1 ELSE 0 END,
				started_at = CASE WHEN $9 THEN now() ELSE started_at END,
				compensation_attempt = compensation_attempt + CASE WHEN $10 THEN 1 ELSE 0 END,
				finished_at = CASE WHEN $11 AND NOT $12 THEN now() ELSE finished_at END,
				compensated_at = CASE WHEN $11 AND $12 THEN now() ELSE compensated_at END,
				output = COALESCE($13, output),
				error = CASE WHEN $9 THEN NULL ELSE COALESCE($14, error) END
			FROM t WHERE task_steps.task_id = t.id AND task_steps.idx = $7
			RETURNING 1
		), ev AS (
			`+insertBatchesSQL("t")+`
		)
		SELECT count(*), COALESCE(max(last_seq), 0) FROM t`,
		taskID, token, string(w.TaskState), len(w.Events), done, total,
		w.Idx, w.State, w.Start, w.StartCompensation, w.Finish, compensationEnd, nullJSON(w.Output), w.Error,
		eventsJSON(w.Events)).Scan(&fenced, &lastSeq)
	if err != nil {
		return interpretError(err)
	}
	if fenced == 0 {
		return ErrLeaseLost
	}
	if len(w.Events) > 0 {
		s.wake.wake(eventsNote(taskID, lastSeq))
	}
	return nil
}

// StepSave is a step row a worker writes whole: a step whose action has no
// side effect needs no write before it runs (invariant 4 guards effects),
// so its rows ride with the task's next write instead of costing their own
// round trips. Inserted when new, replaced otherwise.
type StepSave struct {
	Idx            int
	Name           string
	IdempotencyKey string
	State          string
	Attempt        int
	Output         json.RawMessage
	Error          *string
	// Started and Finished set started_at / finished_at to the database's
	// now() (the step started or finished since the row was last written).
	Started, Finished bool
}

// stepSaveColumns turns saves into the parallel arrays unnest wants.
type stepSaveColumns struct {
	taskIDs, names, keys, states []string
	idx, attempts                []int32
	outputs                      [][]byte
	errs                         []*string
	started, finished            []bool
}

func (c *stepSaveColumns) add(taskID string, s StepSave) {
	c.taskIDs = append(c.taskIDs, taskID)
	c.idx = append(c.idx, int32(s.Idx))
	c.names = append(c.names, s.Name)
	c.keys = append(c.keys, s.IdempotencyKey)
	c.states = append(c.states, s.State)
	c.attempts = append(c.attempts, int32(s.Attempt))
	var out []byte
	if len(s.Output) > 0 {
		out = s.Output
	}
	c.outputs = append(c.outputs, out)
	c.errs = append(c.errs, s.Error)
	c.started = append(c.started, s.Started)
	c.finished = append(c.finished, s.Finished)
}

// upsertStepsSQL is the CTE body that writes saved steps; $fence names the
// CTE of fenced task ids (only steps of tasks whose lease held are written)
// and the placeholders start at $first.
func upsertStepsSQL(fence string, first int) string {
	return stepsSQL(fence, first, `DO UPDATE SET
				state = excluded.state, attempt = excluded.attempt,
				output = COALESCE(excluded.output, ts.output), error = excluded.error,
				started_at = COALESCE(excluded.started_at, ts.started_at),
				finished_at = COALESCE(excluded.finished_at, ts.finished_at)`)
}

// newStepsSQL is upsertStepsSQL for tasks that have no step rows yet (a
// first run finished inside its claim): an insert that never has to update
// costs PostgreSQL about a third less per row. A row that does exist, which
// only a hand edit could make, is left as it is rather than failing the
// whole claim again on every try.
func newStepsSQL(fence string, first int) string {
	return stepsSQL(fence, first, `DO NOTHING`)
}

func stepsSQL(fence string, first int, onConflict string) string {
	p := func(i int) string { return fmt.Sprintf("$%d", first+i) }
	return `INSERT INTO task_steps AS ts (task_id, idx, name, idempotency_key, state, attempt, output, error, started_at, finished_at)
			SELECT s.task_id, s.idx, s.name, s.key, s.state, s.attempt, s.output, s.error,
				CASE WHEN s.started THEN now() END, CASE WHEN s.finished THEN now() END
			FROM unnest(` + p(0) + `::uuid[], ` + p(1) + `::int[], ` + p(2) + `::text[], ` + p(3) + `::text[], ` + p(4) + `::text[], ` +
		p(5) + `::int[], ` + p(6) + `::jsonb[], ` + p(7) + `::text[], ` + p(8) + `::bool[], ` + p(9) + `::bool[])
				AS s(task_id, idx, name, key, state, attempt, output, error, started, finished)
			WHERE s.task_id IN (SELECT id FROM ` + fence + `)
			ON CONFLICT (task_id, idx) ` + onConflict
}

func (c *stepSaveColumns) args() []any {
	return []any{c.taskIDs, c.idx, c.names, c.keys, c.states, c.attempts, c.outputs, c.errs, c.started, c.finished}
}

// TaskFlush writes a held task's buffered work under its lease token in one
// statement: saved step rows and events (with the next seqs). A stale owner
// changes nothing and gets ErrLeaseLost.
func (s *Store) TaskFlush(ctx context.Context, taskID, token string, steps []StepSave, events []task.Event) error {
	if len(steps) == 0 {
		if len(events) == 0 {
			return nil
		}
		return s.StepWrite(ctx, taskID, token, StepWrite{Events: events})
	}
	done, total := progressOf(events)
	var sc stepSaveColumns
	for _, st := range steps {
		sc.add(taskID, st)
	}
	args := []any{taskID, token, len(events), done, total, eventsJSON(events)}
	args = append(args, sc.args()...)
	var fenced, lastSeq int
	err := s.pool.QueryRow(ctx, `
		WITH t AS (
			UPDATE tasks SET
				last_seq = last_seq + $3,
				progress_step = progress_step + $4,
				progress_total = GREATEST(progress_total, $5)
			WHERE id = $1 AND lease_token = $2
			RETURNING id, last_seq, $3::int AS n, $6::text AS events
		), st AS (
			`+upsertStepsSQL("t", 7)+`
		), ev AS (
			`+insertBatchesSQL("t")+`
		)
		SELECT count(*), COALESCE(max(last_seq), 0) FROM t`, args...).Scan(&fenced, &lastSeq)
	if err != nil {
		return interpretError(err)
	}
	if fenced == 0 {
		return ErrLeaseLost
	}
	if len(events) > 0 {
		s.wake.wake(eventsNote(taskID, lastSeq))
	}
	return nil
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
