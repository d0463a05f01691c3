package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/internal/notify"
	"flightdeck/workflow/task"
)

// TaskWrite is one change of a task's row with the events it brings: the
// only way a task's state, progress and events change after its insert.
// Workers make them fenced by their lease token (Token); a person's or the
// system's change (a cancel, a decision, the rescuer) has no Token and is
// made in a transaction that locked the row first. With Release the write
// ends a worker's hold: the lease is cleared and State is where the task
// rests (completed, failed, cancelled, needs_attention, pending or
// compensating to hand it back, awaiting_*, scheduled).
type TaskWrite struct {
	ID    string
	Token string // the lease token the write is fenced by; "" for none
	// WriteID names a worker's write: retried after its commit's reply was
	// lost (a database restart), a write already applied is answered as
	// written and not applied twice. "" for none. Retried says an earlier
	// try may have committed, so the statement looks for it (a first try
	// does not pay for that look).
	WriteID string
	Retried bool
	State   task.State // "" keeps the state
	// Release clears the lease; RunAfter goes with it.
	Release  bool
	Error    *string // the task's error (nil keeps it)
	KeepErr  bool    // with Error: only if the task has none yet
	Result   json.RawMessage
	RunAfter *time.Time // with State scheduled: when it runs (nil keeps it, but a Release clears it)
	// HeldUntil: a freeze holds the task, which started no step, until
	// then (contract §9): it stays scheduled until the later of RunAfter
	// and HeldUntil, its run_at (RunAfter) unchanged, and its started_at
	// is cleared. Any other change of state ends the hold.
	HeldUntil *time.Time
	// BumpAttempt counts this run as a failed start (a handler panic), like
	// a worker that died.
	BumpAttempt bool
	Cancel      bool          // cancel_requested_at, if not set yet
	Priority    task.Priority // 0 keeps the priority
	// Progress sets the progress step outright (an agent's iteration);
	// nil adds the steps the events complete.
	Progress *int
	Events   []task.Event
	Steps    []StepSave
	// StepStates move steps of the task from one state to another: a
	// person's or the system's change (the pending steps of a task
	// cancelled before they ran are skipped, a failed step skipped, failed
	// compensations retried). Not with Steps for the same step.
	StepStates []StepStateChange
	// What a worker parks with, written in the same transaction.
	Approvals *ApprovalPark
	Question  *QuestionPark
	Agent     *AgentSave
	// Run control (contract §10). Pause asks a running task to pause
	// (pause_requested_at, if not set yet); Resumed ends a pause, clearing
	// the request and a failed step's decision. With Release and State
	// paused, FailedStep is the step a person must decide about (nil for a
	// person's pause) and DecisionTimeout how long they have (from the
	// database's clock; 0 for no deadline). A request lasts while the task
	// runs or waits to run again, and ends with any other state.
	Pause           bool
	Resumed         bool
	FailedStep      *task.FailedStep
	DecisionTimeout time.Duration
}

// StepStateChange moves the task's step Idx (AllSteps for every step) to
// To if its state is one of From.
type StepStateChange struct {
	Idx  int
	From []task.StepState
	To   task.StepState
}

// AllSteps is StepStateChange.Idx for every step of the task.
const AllSteps = -1

// Written is what a write left: the task's state and its last seq, and
// whether a person asked it to cancel or pause meanwhile. Every write of a
// worker so learns of a request, whether or not its notification arrived.
type Written struct {
	State           task.State
	LastSeq         int
	CancelRequested bool
	PauseRequested  bool
}

// parks reports whether w writes more than the task row, events and steps.
func (w *TaskWrite) parks() bool { return w.Approvals != nil || w.Question != nil || w.Agent != nil }

// TaskWrites applies many workers' writes in one autocommit statement (the
// queue's batched writer: a write costs its rows, not a round trip and a
// commit of its own) and returns, per task id, what each applied write
// left; a write whose lease was lost is missing from it. A batch holds at
// most one write per task. Writes that end tasks touch no shared row: the
// rollups are folded from the outbox afterwards (RollupFoldOnce) and what
// is deployed where is read from the tasks. Only writes that park a task
// (approvals, a question, the agent's state) take a transaction, to add
// their rows with it.
func (s *Store) TaskWrites(ctx context.Context, ws []TaskWrite) (map[string]Written, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	if !slices.ContainsFunc(ws, func(w TaskWrite) bool { return w.parks() }) {
		out, notes, err := taskApply(ctx, s.pool, ws)
		if err != nil {
			return nil, err
		}
		s.wake.Send(notes)
		s.foldWake(notes)
		return out, nil
	}
	var out map[string]Written
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		ws = slices.Clone(ws)
		slices.SortFunc(ws, func(a, b TaskWrite) int { return cmp.Compare(a.ID, b.ID) })
		lost := map[string]bool{}
		for i := range ws {
			if !ws[i].parks() {
				continue
			}
			ok, err := parkRows(ctx, tx, &ws[i])
			if err != nil {
				return err
			}
			lost[ws[i].ID] = !ok
		}
		ws = slices.DeleteFunc(ws, func(w TaskWrite) bool { return lost[w.ID] })
		var err error
		out, err = taskApplyTx(ctx, tx, ws...)
		if err != nil {
			return err
		}
		for _, w := range ws {
			if _, ok := out[w.ID]; ok && w.Agent != nil {
				if err := agentStateUpsert(ctx, tx, w.ID, *w.Agent); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return out, err
}

// taskApplyTx applies ws in tx (for a person's or the system's change, tx
// locked the rows first).
func taskApplyTx(ctx context.Context, tx pgx.Tx, ws ...TaskWrite) (map[string]Written, error) {
	out, notes, err := taskApply(ctx, tx, ws)
	if err != nil {
		return nil, err
	}
	noteTx(tx, notes)
	return out, nil
}

// rowsQuerier runs a statement that returns rows, on a pool or in a transaction.
type rowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// taskApply is the one statement that changes tasks after their insert and
// appends their events: it counts each task's seqs (last_seq) and writes
// the events, encoded by the one codec, as one batch row per task, so a
// state change and its events always commit together (invariant 6). Tasks
// are updated in id order, as concurrent batches and claims lock rows, so
// they do not deadlock. It returns what it applied and what to announce
// (Ended: it ended tasks, which wakes the rollup fold).
func taskApply(ctx context.Context, q rowsQuerier, ws []TaskWrite) (map[string]Written, notify.Notes, error) {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b TaskWrite) int { return cmp.Compare(a.ID, b.ID) })
	n := len(ws)
	var in applyArrays
	in.grow(n)
	var st stepArrays
	var moves stepMoves
	for _, w := range ws {
		in.add(w)
		for _, s := range w.Steps {
			st.add(w.ID, s)
		}
		for _, c := range w.StepStates {
			moves.add(w.ID, c)
		}
	}
	rows, err := q.Query(ctx, `
		WITH input AS (
			SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::bool[], $5::text[], $6::bool[], $7::jsonb[],
				$8::timestamptz[], $9::bool[], $10::bool[], $11::bool[], $12::smallint[], $13::int[], $14::int[], $15::int[],
				$16::int[], $17::jsonb[], $30::bool[], $31::bool[], $32::bool[], $33::jsonb[], $34::float8[], $35::uuid[], $41::bool[], $42::timestamptz[])
				AS i(id, token, state, release, error, keep_error, result, run_after, bump, finished, cancel, priority,
					progress, n, done, total, events, waits, pause, resumed, failed_step, decision_secs, write_id, end_pause, held_until)
		), written AS (
			UPDATE tasks t SET
				state = COALESCE(NULLIF(i.state, ''), t.state),
				error = CASE WHEN i.error IS NULL THEN t.error WHEN i.keep_error THEN COALESCE(t.error, i.error) ELSE i.error END,
				result = COALESCE(i.result, t.result),
				run_after = CASE WHEN i.release OR i.run_after IS NOT NULL THEN i.run_after ELSE t.run_after END,
				attempt = t.attempt + CASE WHEN i.bump THEN 1 ELSE 0 END,
				finished_at = CASE WHEN i.finished THEN now() ELSE t.finished_at END,
				cancel_requested_at = CASE WHEN i.cancel THEN COALESCE(t.cancel_requested_at, now()) ELSE t.cancel_requested_at END,
				priority = COALESCE(NULLIF(i.priority, 0), t.priority),
				lease_owner = CASE WHEN i.release THEN NULL ELSE t.lease_owner END,
				lease_token = CASE WHEN i.release THEN NULL ELSE t.lease_token END,
				lease_expires_at = CASE WHEN i.release THEN NULL ELSE t.lease_expires_at END,
				pause_requested_at = CASE WHEN i.pause THEN COALESCE(t.pause_requested_at, now())
					WHEN i.end_pause THEN NULL ELSE t.pause_requested_at END,
				failed_step = CASE WHEN i.resumed THEN NULL WHEN i.release THEN i.failed_step ELSE t.failed_step END,
				decision_expires_at = CASE WHEN i.resumed THEN NULL
					WHEN i.release AND i.decision_secs > 0 THEN now() + make_interval(secs => i.decision_secs)
					WHEN i.release THEN NULL ELSE t.decision_expires_at END,
				last_seq = t.last_seq + i.n,
				progress_step = COALESCE(i.progress, t.progress_step + i.done),
				progress_total = GREATEST(t.progress_total, i.total),
				-- time spent waiting for people is not run time
				waiting_since = CASE WHEN i.state = '' THEN t.waiting_since WHEN i.waits THEN COALESCE(t.waiting_since, now()) END,
				waited_ms = t.waited_ms + CASE WHEN i.state <> '' AND NOT i.waits AND t.waiting_since IS NOT NULL
					THEN GREATEST(0, (extract(epoch FROM now() - t.waiting_since) * 1000)::bigint) ELSE 0 END,
				last_write = COALESCE(i.write_id, t.last_write),
				held_until = CASE WHEN i.held_until IS NOT NULL THEN i.held_until WHEN i.state <> '' THEN NULL ELSE t.held_until END,
				-- a held task started no step: it has not started
				started_at = CASE WHEN i.held_until IS NOT NULL THEN NULL ELSE t.started_at END
			FROM input i
			WHERE t.id = i.id AND (i.token IS NULL OR t.lease_token = i.token)
				-- a write retried after its commit's reply was lost is not applied again
				AND (i.write_id IS NULL OR t.last_write IS DISTINCT FROM i.write_id)
			RETURNING t.id, t.state, t.last_seq, i.n, i.events, t.concurrency_key IS NOT NULL AS keyed, i.finished,
				t.cancel_requested_at IS NOT NULL AS cancel_requested, t.pause_requested_at IS NOT NULL AS pause_requested
		), written_events AS (
			-- ends marks the batch of the write that ended its task: the
			-- rollup fold reads only those (migration 00082)
			INSERT INTO task_event_batches (task_id, first_seq, last_seq, events, ends)
			SELECT id, last_seq - n + 1, last_seq, events, finished FROM written WHERE n > 0
		), written_steps AS (
			INSERT INTO task_steps AS ts (task_id, idx, name, idempotency_key, state, attempt, compensation_attempt,
				output, error, started_at, finished_at, compensated_at)
			SELECT s.task_id, s.idx, s.name, s.key, s.state, s.attempt, s.comp_attempt, s.output, s.error,
				s.started, s.finished, s.compensated
			FROM unnest($18::uuid[], $19::int[], $20::text[], $21::text[], $22::text[], $23::int[], $24::int[],
				$25::jsonb[], $26::text[], $27::timestamptz[], $28::timestamptz[], $29::timestamptz[])
				AS s(task_id, idx, name, key, state, attempt, comp_attempt, output, error, started, finished, compensated)
			WHERE s.task_id IN (SELECT id FROM written)
			ON CONFLICT (task_id, idx) DO UPDATE SET
				-- a save is the whole row as its handler keeps it
				state = excluded.state, attempt = excluded.attempt, compensation_attempt = excluded.compensation_attempt,
				output = excluded.output, error = excluded.error, started_at = excluded.started_at,
				finished_at = excluded.finished_at, compensated_at = excluded.compensated_at
		), moved_steps AS (
			UPDATE task_steps s SET state = m.to_state
			FROM unnest($37::uuid[], $38::int[], $39::text[], $40::text[]) AS m(task_id, idx, from_state, to_state)
			WHERE s.task_id = m.task_id AND (m.idx < 0 OR s.idx = m.idx) AND s.state = m.from_state
				AND s.task_id IN (SELECT id FROM written)
				-- a one-time filter: a worker's write moves no step state and
				-- pays nothing for this
				AND cardinality($37::uuid[]) > 0
		)
		SELECT id, state, last_seq, keyed, finished, cancel_requested, pause_requested FROM written
		UNION ALL
		-- applied by an earlier try of the same write (this statement's
		-- snapshot predates its own updates): answered as written, once
		SELECT t.id, t.state, t.last_seq, false, false, t.cancel_requested_at IS NOT NULL, t.pause_requested_at IS NOT NULL
		FROM tasks t JOIN input i ON t.id = i.id AND t.last_write = i.write_id
		WHERE $36::bool`,
		in.ids, in.tokens, in.states, in.release, in.errs, in.keepErr, in.results, in.runAfter, in.bump, in.finished,
		in.cancel, in.priority, in.progress, in.counts, in.done, in.total, in.events,
		st.taskIDs, st.idx, st.names, st.keys, st.states, st.attempts, st.compAttempts, st.outputs, st.errs,
		st.started, st.finished, st.compensated, in.waits, in.pause, in.resumed, in.failedSteps, in.decisionSecs, in.writeIDs,
		slices.ContainsFunc(ws, func(w TaskWrite) bool { return w.Retried && w.WriteID != "" }),
		moves.taskIDs, moves.idx, moves.from, moves.to, in.endPause, in.heldUntil)
	if err != nil {
		return nil, notify.Notes{}, fmt.Errorf("error writing tasks: %w", interpretError(err))
	}
	applied, err := pgx.CollectRows(rows, pgx.RowToStructByName[appliedRow])
	if err != nil {
		return nil, notify.Notes{}, fmt.Errorf("error writing tasks: %w", interpretError(err))
	}
	out := make(map[string]Written, n)
	notes := notify.Notes{Events: make([]notify.TaskSeq, 0, n)}
	for _, a := range applied {
		state := task.State(a.State)
		out[a.ID] = Written{State: state, LastSeq: a.LastSeq, CancelRequested: a.CancelRequested, PauseRequested: a.PauseRequested}
		notes.Ended = notes.Ended || a.Finished
		notes.Events = append(notes.Events, notify.TaskSeq{ID: a.ID, Seq: a.LastSeq})
		// tasks handed back can be claimed at once, and so can the next
		// task of a concurrency key its holder gave up
		notes.Ready = notes.Ready || state.Claimable() || a.Keyed && state.Terminal()
	}
	return out, notes, nil
}

// appliedRow is a task taskApply changed, as its statement returns it.
// Finished says this write ended it; Keyed that it held a concurrency key.
type appliedRow struct {
	ID       string `db:"id"`
	State    string `db:"state"`
	LastSeq  int    `db:"last_seq"`
	Keyed    bool   `db:"keyed"`
	Finished bool   `db:"finished"`
	// CancelRequested, PauseRequested: a person's request stands.
	CancelRequested bool `db:"cancel_requested"`
	PauseRequested  bool `db:"pause_requested"`
}

// applyArrays are TaskWrites as the parallel arrays unnest wants.
type applyArrays struct {
	ids, states                                     []string
	tokens, errs, writeIDs                          []*string
	release, keepErr, bump, finished, cancel, waits []bool
	pause, resumed, endPause                        []bool
	results, events, failedSteps                    [][]byte
	decisionSecs                                    []float64
	runAfter, heldUntil                             []*time.Time
	priority                                        []int16
	progress                                        []*int32
	counts, done, total                             []int32
}

func (a *applyArrays) grow(n int) {
	a.ids, a.states, a.tokens, a.errs = make([]string, 0, n), make([]string, 0, n), make([]*string, 0, n), make([]*string, 0, n)
	a.release, a.keepErr, a.bump = make([]bool, 0, n), make([]bool, 0, n), make([]bool, 0, n)
	a.finished, a.cancel = make([]bool, 0, n), make([]bool, 0, n)
	a.results, a.events, a.runAfter = make([][]byte, 0, n), make([][]byte, 0, n), make([]*time.Time, 0, n)
	a.priority, a.progress = make([]int16, 0, n), make([]*int32, 0, n)
	a.counts, a.done, a.total = make([]int32, 0, n), make([]int32, 0, n), make([]int32, 0, n)
}

func (a *applyArrays) add(w TaskWrite) {
	var token *string
	if w.Token != "" {
		token = &w.Token
	}
	var result []byte
	if len(w.Result) > 0 {
		result = w.Result
	}
	var progress *int32
	if w.Progress != nil {
		p := int32(*w.Progress)
		progress = &p
	}
	d, tot := progressOf(w.Events)
	if w.Agent != nil {
		// an agent's progress is its iteration of its budget
		p := int32(w.Agent.State.Iteration)
		progress, tot = &p, max(tot, w.Agent.Budget)
	}
	a.ids, a.tokens, a.states = append(a.ids, w.ID), append(a.tokens, token), append(a.states, string(w.State))
	// a cancel keeps the reason recorded when it was asked for
	keep := w.KeepErr || w.State == task.StateCancelled
	a.release, a.errs, a.keepErr = append(a.release, w.Release), append(a.errs, w.Error), append(a.keepErr, keep)
	a.results, a.runAfter, a.bump = append(a.results, result), append(a.runAfter, w.RunAfter), append(a.bump, w.BumpAttempt)
	a.finished, a.cancel = append(a.finished, w.State.Terminal()), append(a.cancel, w.Cancel)
	a.waits = append(a.waits, w.State.WaitsForPerson())
	a.priority, a.progress = append(a.priority, int16(w.Priority)), append(a.progress, progress)
	a.counts, a.done, a.total = append(a.counts, int32(len(w.Events))), append(a.done, int32(d)), append(a.total, int32(tot))
	a.events = append(a.events, encodeEvents(w.Events))
	var failed []byte
	if w.FailedStep != nil {
		failed, _ = json.Marshal(w.FailedStep)
	}
	a.pause, a.resumed = append(a.pause, w.Pause), append(a.resumed, w.Resumed)
	// a pause request ends with a resume or a state that does not keep it
	// (a write that keeps the state keeps the request)
	a.endPause = append(a.endPause, w.Resumed || w.State != "" && !w.State.KeepsPauseRequest())
	a.writeIDs = append(a.writeIDs, nonEmpty(w.WriteID))
	a.failedSteps, a.decisionSecs = append(a.failedSteps, failed), append(a.decisionSecs, w.DecisionTimeout.Seconds())
	a.heldUntil = append(a.heldUntil, w.HeldUntil)
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

// stepArrays turns step saves into the parallel arrays unnest wants.
type stepArrays struct {
	taskIDs, names, keys, states   []string
	idx, attempts, compAttempts    []int32
	outputs                        [][]byte
	errs                           []*string
	started, finished, compensated []*time.Time
}

func (c *stepArrays) add(taskID string, s StepSave) {
	var out []byte
	if len(s.Output) > 0 {
		out = s.Output
	}
	c.taskIDs, c.idx, c.names = append(c.taskIDs, taskID), append(c.idx, int32(s.Idx)), append(c.names, s.Name)
	c.keys, c.states = append(c.keys, s.IdempotencyKey), append(c.states, string(s.State))
	c.attempts, c.compAttempts = append(c.attempts, int32(s.Attempt)), append(c.compAttempts, int32(s.CompensationAttempt))
	c.outputs, c.errs = append(c.outputs, out), append(c.errs, s.Error)
	c.started, c.finished, c.compensated = append(c.started, s.StartedAt), append(c.finished, s.FinishedAt), append(c.compensated, s.CompensatedAt)
}

// stepMoves turns step state changes into the parallel arrays unnest
// wants, one row per state moved from.
type stepMoves struct {
	taskIDs, from, to []string
	idx               []int32
}

func (m *stepMoves) add(taskID string, c StepStateChange) {
	for _, f := range c.From {
		m.taskIDs, m.idx = append(m.taskIDs, taskID), append(m.idx, int32(c.Idx))
		m.from, m.to = append(m.from, string(f)), append(m.to, string(c.To))
	}
}
