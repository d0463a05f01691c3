package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/internal/notify"
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
	Params          json.RawMessage // public params: secret ones' values replaced by "[REDACTED]"
	SecretParams    json.RawMessage // the secret params' real values; nil for none
	Prompt          string
	Priority        task.Priority
	MaxAttempts     int
	DeadlineSeconds int             // 0: no deadline
	IdempotencyKey  string          // "" for none
	RequestHash     []byte          // hash of the request body, to tell a replay from a reuse
	MaxPending      int             // the team's bound on pending tasks; 0: unbounded
	Webhook         json.RawMessage // nil for none
	// ConcurrencyKey ("" for none) and ConcurrencyPolicy (pipeline.Policy*)
	// come from the pipeline's concurrency block, rendered with the params.
	ConcurrencyKey    string
	ConcurrencyPolicy string
	// ID is the new task's id (NewTaskID), "" to let the database make
	// one. Steps, made for that id, are stored with the task: a deploy's
	// planned steps with their idempotency keys, so its first run finds
	// every key stored and starts its first action without a write of its
	// own (invariant 4).
	ID    string
	Steps []StepSave
	// TargetKey ("" for none) names the deploy's target (pipeline.TargetKey):
	// its environment and history.
	TargetKey string
	// RerunOf is the task a re-run repeats ("" for none).
	RerunOf string
	// Traceparent is the submitting request's W3C trace context ("" for
	// none), which the task's runs link to (contract §8).
	Traceparent string
	// State is the new task's state: "" (pending), scheduled (with
	// RunAfter) or awaiting_approval (with Reviewers), as the rules of its
	// environment say (saga.ProtectDeploy).
	State task.State
	// RunAfter: with State scheduled, when it becomes pending; with
	// awaiting_approval, the submit's run_at, kept for after the reviewers.
	RunAfter *time.Time
	// Environment is a deploy's environment ("" for none).
	Environment string
	// PromotedFrom is the deploy a promotion repeats ("" for none).
	PromotedFrom string
	// Override is an admin's break-glass override (nil for none).
	Override json.RawMessage
	// Reviewers, with State awaiting_approval, is the environment's approval.
	Reviewers *ReviewersParams
	// Events follow the submit's first event (an override, the reviewers'
	// request, a schedule).
	Events []task.Event
	// Team and CreatedBy (the team's name, the creator's email) complete
	// the task TaskInsert answers when it cannot read the new task back;
	// "" leaves them empty there.
	Team, CreatedBy string

	// cancelled is why the task is cancelled as it is inserted
	// (task.CancelledOnSubmit), "" for none: set by taskInsertLocked.
	cancelled string
}

// ReviewersParams are an environment's reviewers of a new deploy: one
// approval of kind environment that needs Required distinct approvals.
type ReviewersParams struct {
	ID          string // the approval's id (NewTaskID)
	Environment string
	Required    int
	Roles       []string
	Timeout     time.Duration
	// Wait is the environment's wait timer, started by the last approval.
	Wait    time.Duration
	Changes json.RawMessage // what the deploy changes (nil for none)
	// Covers are the deploy's step approvals this one decides (contract
	// §9: their roles are all among the reviewers'): when the reviewers
	// approve, each is recorded approved by them, so people decide once.
	Covers []CoveredStep
}

// CoveredStep is a step approval an environment's reviewers decide.
type CoveredStep struct {
	Idx   int      `json:"idx"`
	Name  string   `json:"name"`
	Roles []string `json:"roles"`
}

// TaskInsert accepts a task: the row and its first event are committed in
// one statement, and the workers' wake-up is sent before it returns, so a
// caller that got a task back can rely on it being durable (invariant 1).
// With an idempotency key already used by the team it returns the earlier
// task and created=false when the request hash matches,
// ErrIdempotencyConflict when it does not; concurrent uses of one key meet
// at the unique index, so exactly one task is made.
//
// The pending bound is exact: with a bound, submitters of one team take the
// team's lock one at a time (uncommitted inserts are invisible to a count,
// so nothing lock-free can be exact); without one (benchmarks, bulk
// configurations) the statement runs on its own and a team's submissions
// commit together.
func (s *Store) TaskInsert(ctx context.Context, p TaskInsertParams) (t *task.Task, created bool, err error) {
	if err := checkObject("secret params", p.SecretParams); err != nil {
		return nil, false, err
	}
	var id string
	var res insertResult
	for try := 0; ; try++ {
		if p.MaxPending > 0 || p.ConcurrencyPolicy == task.PolicyCancelNewest {
			res, err = s.taskInsertLocked(ctx, p)
		} else {
			res, err = s.taskInsertOnce(ctx, s.pool, p)
		}
		if err != nil {
			return nil, false, err
		}
		switch {
		case res.insertedID != "":
			id, created = res.insertedID, true
		case res.existingID != "":
			if !bytes.Equal(res.existingHash, p.RequestHash) {
				return nil, false, ErrIdempotencyConflict
			}
			id = res.existingID
		case !res.room:
			return nil, false, ErrQueueFull
		case try < 3:
			// A concurrent submission with the same key committed after
			// this statement's snapshot: its task is visible on the next try.
			continue
		default:
			return nil, false, fmt.Errorf("error inserting task: %w", ErrConflict)
		}
		break
	}
	if created {
		select {
		case <-s.wake.Send(notify.Notes{Ready: true, Events: []notify.TaskSeq{{ID: id, Seq: max(1, res.lastSeq)}}}):
		case <-ctx.Done():
		}
		if p.ConcurrencyKey != "" && p.ConcurrencyPolicy == "cancel_in_progress" {
			// The task is committed: an error now would answer 503 for a
			// task that runs. The cancels get their own time (the request's
			// may have run out); should they fail anyway, the new task
			// waits its turn behind the holder, as under policy queue.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), supersedeTimeout)
			_ = s.supersede(sctx, p.TeamID, p.ConcurrencyKey, id)
			cancel()
		}
	}
	t, err = s.TaskGet(ctx, []string{p.TeamID}, id)
	if err != nil && created {
		// The task is committed and will run: an error now (the database
		// went away, the request's time ran out) would tell the client it
		// was not accepted, and a retry without a key would submit it
		// twice. The insert said what the database made; the rest is the
		// request's.
		return withPlan(res.task(p), p.Steps), true, nil
	}
	if created {
		t = withPlan(t, p.Steps)
	}
	return t, created, err
}

// withPlan gives a new task the steps it was stored with, so the answer to
// a submit shows what GET shows (its planned steps and their count), not
// "steps":[] and a total of 0.
func withPlan(t *task.Task, steps []StepSave) *task.Task {
	if t == nil || len(steps) == 0 {
		return t
	}
	t.Steps = make([]task.Step, 0, len(steps))
	for _, st := range steps {
		t.Steps = append(t.Steps, task.Step{Index: st.Idx, Name: st.Name, State: string(st.State), Attempt: st.Attempt, Artifacts: []string{}})
	}
	if t.Progress.TotalStep == 0 {
		t.Progress.TotalStep = len(steps)
	}
	return t
}

type insertResult struct {
	insertedID, existingID string
	existingHash           []byte
	room                   bool
	// What the database made of a new task, for answering without a read.
	state                  string
	createdAt              time.Time
	deadlineAt, finishedAt *time.Time
	error                  *string
	lastSeq                int
}

// task is the new task as the insert made it. blocked_by is left unknown
// (null): it needs a read.
func (r insertResult) task(p TaskInsertParams) *task.Task {
	params := p.Params
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	t := &task.Task{
		ID: r.insertedID, TeamID: p.TeamID, Team: p.Team, Kind: p.Kind, Pipeline: p.Pipeline, Params: params,
		Prompt: p.Prompt, Priority: p.Priority, State: task.State(r.state), MaxAttempts: cmp.Or(p.MaxAttempts, task.MaxAttemptsDefault),
		CreatedByID: p.CreatedByID, CreatedBy: p.CreatedBy, CreatedAt: r.createdAt.UTC(),
		DeadlineAt: r.deadlineAt, FinishedAt: r.finishedAt, Error: r.error, LastSeq: r.lastSeq,
	}
	for _, tp := range []*time.Time{t.DeadlineAt, t.FinishedAt} {
		if tp != nil {
			utc(tp)
		}
	}
	if p.RerunOf != "" {
		t.RerunOf = &p.RerunOf
	}
	return t
}

// taskInsertLocked inserts in a transaction: with a pending bound under the
// team's submission lock, so the pending count it checks cannot change
// before it commits; under cancel_newest after reading who holds the key
// (task.CancelledOnSubmit decides); a task cancelled at once is counted in
// the rollups by the fold, at its task.cancelled event, like any task that
// ends.
func (s *Store) taskInsertLocked(ctx context.Context, p TaskInsertParams) (res insertResult, err error) {
	err = s.withTx(ctx, func(tx pgx.Tx) error {
		if p.MaxPending > 0 {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1::text, 7))`, p.TeamID); err != nil {
				return interpretError(err)
			}
		}
		if p.ConcurrencyPolicy == task.PolicyCancelNewest && p.ConcurrencyKey != "" {
			var holder string
			err := tx.QueryRow(ctx, `SELECT task_id::text FROM concurrency_holds WHERE team_id = $1 AND key = $2`,
				p.TeamID, p.ConcurrencyKey).Scan(&holder)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return interpretError(err)
			}
			if why := task.CancelledOnSubmit(p.ConcurrencyPolicy, p.ConcurrencyKey, holder); why != "" {
				// it never runs: no reviewers, no schedule, its only other event is its end
				data, _ := json.Marshal(map[string]any{"state": task.StateCancelled, "error": why})
				p.State, p.cancelled, p.Reviewers = task.StateCancelled, why, nil
				p.Events = []task.Event{{Type: task.EventTaskCancelled, Status: task.StatusCancelled, Message: "Task cancelled: " + why, Data: data}}
			}
		}
		res, err = s.taskInsertOnce(ctx, tx, p)
		return err
	})
	return res, err
}

// taskInsertOnce is one statement: the earlier task with the same key, or
// the new task and its first event when the team has fewer than
// p.MaxPending pending tasks (0: no bound).
func (s *Store) taskInsertOnce(ctx context.Context, q querier, p TaskInsertParams) (res insertResult, err error) {
	params := p.Params
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	maxAttempts := p.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = task.MaxAttemptsDefault
	}
	var inserted, existing, state *string
	var created *time.Time
	var lastSeq *int
	var st stepArrays
	for _, step := range p.Steps {
		st.add(p.ID, step)
	}
	rv := ReviewersParams{ID: "00000000-0000-0000-0000-000000000000", Roles: []string{}}
	if p.Reviewers != nil && p.State == task.StateAwaitingApproval {
		rv = *p.Reviewers
	}
	err = q.QueryRow(ctx, `
		WITH existing AS (
			SELECT id, request_hash FROM tasks WHERE team_id = $1 AND idempotency_key = NULLIF($10, '')
		), room AS (
			-- without a bound the count is never evaluated
			SELECT $13 = 0 OR (SELECT count(*) FROM (
				SELECT 1 FROM tasks WHERE team_id = $1 AND state = 'pending' LIMIT $13) x) < $13 AS ok
		), ins AS (
			INSERT INTO tasks (id, team_id, created_by, kind, pipeline, params, prompt, priority, max_attempts,
				deadline_at, idempotency_key, request_hash, webhook, secret_params, concurrency_key, target_key, rerun_of, traceparent,
				environment, promoted_from, override, run_after,
				state, finished_at, error, last_seq)
			SELECT COALESCE(NULLIF($17::text, '')::uuid, flightdeck_uuid_v7()), $1, $2, $3, $4, $5, $6, $7, $8,
				CASE WHEN $9 > 0 THEN now() + make_interval(secs => $9) END, NULLIF($10, ''), $11, $12, $14, NULLIF($15, ''), NULLIF($21, ''), NULLIF($22, '')::uuid,
				NULLIF($23, ''),
				NULLIF($33, ''), NULLIF($34, '')::uuid, $35::jsonb, $36::timestamptz,
				COALESCE(NULLIF($24, ''), 'pending'),
				-- a task cancelled at once (cancel_newest) ends as it is made
				CASE WHEN $24 = 'cancelled' THEN now() END, NULLIF($16, ''), 1 + $25
			WHERE NOT EXISTS (SELECT 1 FROM existing) AND ($24 = 'cancelled' OR (SELECT ok FROM room))
			ON CONFLICT (team_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
			RETURNING id, state, error, created_at, deadline_at, finished_at, last_seq
		), ev AS (
			-- a task cancelled at once ends with this batch (the rollup
			-- fold's, migration 00082)
			INSERT INTO task_event_batches (task_id, first_seq, last_seq, events, ends)
			SELECT id, 1, last_seq,
				jsonb_build_array(flightdeck_event('task.state', 'log', 'Task submitted',
					jsonb_build_object('state', CASE WHEN state = 'cancelled' THEN 'pending' ELSE state END)))
				|| COALESCE($26::jsonb, '[]'),
				finished_at IS NOT NULL
			FROM ins
		), environment AS (
			-- a deploy's target is listed from its first submit on
			INSERT INTO environments (team_id, pipeline, target_key)
			SELECT $1, $4, NULLIF($21, '') FROM ins WHERE NULLIF($21, '') IS NOT NULL
			ON CONFLICT DO NOTHING
		), reviewers AS (
			-- an environment's reviewers decide before the first step
			INSERT INTO approvals (id, task_id, team_id, step_idx, step_name, attempt, kind, detail, roles, expires_at, required, changes)
			-- step_idx -1: before every step, apart from step 0's own
			SELECT $27::uuid, ins.id, $1, -1, $33, 1, 'environment', $28, $29, now() + make_interval(secs => $30), $31, $32::jsonb
			FROM ins WHERE ins.state = 'awaiting_approval'
		), override_audit AS (
			-- an admin's break-glass is audited with the task that carries it
			INSERT INTO audit_log (team_id, actor, action, target, data)
			SELECT $1, $35::jsonb ->> 'by', 'task.override', ins.id::text, $35::jsonb || jsonb_build_object('environment', $33::text)
			FROM ins WHERE $35::jsonb IS NOT NULL AND ins.state <> 'cancelled'
		), steps AS (
			-- a task cancelled at once never runs its steps
			INSERT INTO task_steps (task_id, idx, name, idempotency_key, state)
			SELECT ins.id, s.idx, s.name, s.key, CASE WHEN ins.state = 'cancelled' THEN 'skipped' ELSE 'pending' END
			FROM ins, unnest($18::int[], $19::text[], $20::text[]) AS s(idx, name, key)
		)
		SELECT i.id, (SELECT id FROM existing), (SELECT request_hash FROM existing), (SELECT ok FROM room),
			i.state, i.created_at, i.deadline_at, i.finished_at, i.error, i.last_seq
		FROM (SELECT 1) one LEFT JOIN ins i ON true`,
		p.TeamID, p.CreatedByID, string(p.Kind), p.Pipeline, []byte(params), p.Prompt, int16(p.Priority), maxAttempts,
		p.DeadlineSeconds, p.IdempotencyKey, p.RequestHash, nullJSON(p.Webhook), p.MaxPending, secretJSON(p.SecretParams),
		p.ConcurrencyKey, p.cancelled, p.ID, st.idx, st.names, st.keys, p.TargetKey, p.RerunOf, p.Traceparent,
		string(p.State), len(p.Events), encodeEvents(p.Events), rv.ID, rv.detail(), rv.Roles, rv.Timeout.Seconds(), rv.Required,
		nullJSON(rv.Changes), p.Environment, p.PromotedFrom, nullJSON(p.Override), p.RunAfter).Scan(&inserted, &existing, &res.existingHash, &res.room,
		&state, &created, &res.deadlineAt, &res.finishedAt, &res.error, &lastSeq)
	if err != nil {
		return res, interpretError(err)
	}
	if inserted != nil {
		res.insertedID, res.state, res.createdAt, res.lastSeq = *inserted, *state, *created, *lastSeq
	}
	if existing != nil {
		res.existingID = *existing
	}
	return res, nil
}

// TaskInsertMany inserts n tasks of one team in one statement, each with
// its first event, and wakes the workers once (benchmarks, bulk loads). No
// pending bound or idempotency keys. steps, when not nil, gives each new
// task's step rows, as a submit stores them (TaskInsertParams.Steps); the
// ids are then made here (NewTaskID).
func (s *Store) TaskInsertMany(ctx context.Context, teamID, createdByID string, kind task.Kind, pipeline string, n int, steps func(id string) []StepSave) error {
	var ids []string
	var st stepArrays
	if steps != nil {
		ids = make([]string, n)
		for i := range ids {
			ids[i] = NewTaskID()
			for _, step := range steps(ids[i]) {
				st.add(ids[i], step)
			}
		}
	}
	_, err := s.pool.Exec(ctx, `
		WITH ins AS (
			INSERT INTO tasks (id, team_id, created_by, kind, pipeline, last_seq)
			SELECT COALESCE(ids[i], flightdeck_uuid_v7()), $1, $2, $3, $4, 1
			FROM generate_series(1, $5) AS i, (SELECT $6::uuid[] AS ids) given
			RETURNING id
		), ev AS (
			INSERT INTO task_event_batches (task_id, first_seq, last_seq, events)
			SELECT id, 1, 1, '[{"type":"task.state","status":"log","message":"Task submitted","data":{"state":"pending"}}]' FROM ins
		), steps AS (
			INSERT INTO task_steps (task_id, idx, name, idempotency_key, state)
			SELECT s.task_id, s.idx, s.name, s.key, 'pending'
			FROM unnest($7::uuid[], $8::int[], $9::text[], $10::text[]) AS s(task_id, idx, name, key)
		)
		SELECT count(*) FROM ins`,
		teamID, createdByID, string(kind), pipeline, n, ids, st.taskIDs, st.idx, st.names, st.keys)
	if err != nil {
		return fmt.Errorf("error inserting tasks: %w", interpretError(err))
	}
	<-s.wake.Send(readyNote)
	return nil
}

// supersedeTimeout bounds the cancels of a new task's superseded ones.
const supersedeTimeout = 5 * time.Second

// supersede cancels, for a new task under policy cancel_in_progress, every
// other unfinished task of its team with the same concurrency key: the one
// holding it compensates, the ones waiting for it end at once. The new task
// then takes the key when its holder is done.
func (s *Store) supersede(ctx context.Context, teamID, key, newID string) error {
	rows, err := s.pool.Query(ctx, `
		SELECT id FROM tasks WHERE team_id = $1 AND concurrency_key = $2 AND id <> $3
			AND state NOT IN `+terminalStates+`
		ORDER BY created_at`, teamID, key, newID)
	if err != nil {
		return fmt.Errorf("error finding the tasks a new one supersedes: %w", interpretError(err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("error finding the tasks a new one supersedes: %w", interpretError(err))
	}
	for _, id := range ids {
		_, err := s.TaskCancel(ctx, []string{teamID}, id, "task "+newID+" (concurrency policy cancel_in_progress)")
		if err != nil && !errors.Is(err, ErrTerminal) && !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return nil
}

// checkObject refuses JSON that is not an object (nil is none): the claim
// merges secret params into params with ||, which for anything but two
// objects would not be a parameter map.
func checkObject(what string, b json.RawMessage) error {
	if len(b) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("error inserting task: %s must be a JSON object: %w", what, err)
	}
	return nil
}

// secretJSON is the secret_params value: NULL for none (an empty object
// included), so a task without secrets looks like one stored before them.
func secretJSON(b json.RawMessage) any {
	if s := string(bytes.TrimSpace(b)); s == "{}" || s == "null" {
		return nil
	}
	return nullJSON(b)
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}

// detail is the environment approval's stored detail: its wait timer.
func (r ReviewersParams) detail() []byte {
	d := map[string]any{"environment": r.Environment, "wait_seconds": int(r.Wait.Seconds())}
	if len(r.Covers) > 0 {
		d["covers"] = r.Covers
	}
	b, _ := json.Marshal(d)
	return b
}
