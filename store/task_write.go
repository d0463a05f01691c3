package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"flightdeck/internal/wake"
	"flightdeck/workflow/task"
)

// TaskWrite is one write of a worker about a task it holds: events (with
// the task's next seqs), step rows, and optionally a new state. With
// Release the write ends the hold: the lease is cleared and State is where
// the task rests (completed, failed, cancelled, needs_attention, pending or
// compensating to hand it back, awaiting_*, scheduled). It is applied only
// while Token is still the task's lease token: a stale owner writes nothing.
type TaskWrite struct {
	ID    string
	Token string
	State task.State // "" keeps the state
	// Release clears the lease; Error, Result and RunAfter go with it.
	Release  bool
	Error    *string
	Result   json.RawMessage
	RunAfter *time.Time // with State scheduled: when to run again
	// BumpAttempt counts this run as a failed start (a handler panic), like
	// a worker that died.
	BumpAttempt bool
	Events      []task.Event
	Steps       []StepSave
	// With Release and State paused: the failed step the task waits on a
	// decision about (nil for a person's pause), and how long the decision
	// may take (from the database's clock; 0 for no deadline).
	FailedStep      *task.FailedStep
	DecisionTimeout time.Duration
}

// Written is what a write left: the task's state and its last seq.
type Written struct {
	State   task.State
	LastSeq int
}

// TaskWrites applies many workers' writes in one statement and one
// transaction (the queue's batched writer: a write costs its rows, not a
// round trip and a commit of its own) and returns, per task id, what each
// applied write left; a write whose lease was lost is missing from it. A
// batch holds at most one write per task. Tasks are updated in id order, as
// concurrent batches and claims lock rows, so they do not deadlock.
func (s *Store) TaskWrites(ctx context.Context, ws []TaskWrite) (map[string]Written, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b TaskWrite) int { return cmp.Compare(a.ID, b.ID) })
	n := len(ws)
	ids, tokens, states := make([]string, n), make([]string, n), make([]string, n)
	release, bump := make([]bool, n), make([]bool, n)
	errs, results, runAfter := make([]*string, n), make([][]byte, n), make([]*time.Time, n)
	counts, done, total := make([]int32, n), make([]int32, n), make([]int32, n)
	events := make([][]byte, n)
	failedSteps, decisionSecs := make([][]byte, n), make([]float64, n)
	var st stepArrays
	for i, w := range ws {
		ids[i], tokens[i], states[i], release[i], bump[i] = w.ID, w.Token, string(w.State), w.Release, w.BumpAttempt
		errs[i], runAfter[i] = w.Error, w.RunAfter
		if len(w.Result) > 0 {
			results[i] = w.Result
		}
		d, tot := progressOf(w.Events)
		counts[i], done[i], total[i], events[i] = int32(len(w.Events)), int32(d), int32(tot), encodeEvents(w.Events)
		if w.FailedStep != nil {
			failedSteps[i], _ = json.Marshal(w.FailedStep)
		}
		decisionSecs[i] = w.DecisionTimeout.Seconds()
		for _, s := range w.Steps {
			st.add(w.ID, s)
		}
	}
	rows, err := s.pool.Query(ctx, `
		WITH input AS (
			SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::bool[], $5::text[], $6::jsonb[], $7::timestamptz[],
				$8::bool[], $9::int[], $10::int[], $11::int[], $12::jsonb[], $25::jsonb[], $26::float8[])
				AS i(id, token, state, release, error, result, run_after, bump, n, done, total, events, failed_step, decision_secs)
		), written AS (
			UPDATE tasks t SET
				state = COALESCE(NULLIF(i.state, ''), t.state),
				-- a cancel keeps the reason recorded when it was asked for
				error = CASE WHEN i.state = 'cancelled' THEN COALESCE(t.error, i.error) ELSE COALESCE(i.error, t.error) END,
				result = COALESCE(i.result, t.result),
				run_after = CASE WHEN i.release THEN i.run_after ELSE t.run_after END,
				attempt = t.attempt + CASE WHEN i.bump THEN 1 ELSE 0 END,
				finished_at = CASE WHEN i.state IN ('completed', 'failed', 'cancelled') THEN now() ELSE t.finished_at END,
				lease_owner = CASE WHEN i.release THEN NULL ELSE t.lease_owner END,
				lease_token = CASE WHEN i.release THEN NULL ELSE t.lease_token END,
				lease_expires_at = CASE WHEN i.release THEN NULL ELSE t.lease_expires_at END,
				-- a pause request lasts while the task runs or waits to run again
				pause_requested_at = CASE WHEN COALESCE(NULLIF(i.state, ''), t.state) IN ('running', 'pending') THEN t.pause_requested_at END,
				failed_step = CASE WHEN i.release THEN i.failed_step ELSE t.failed_step END,
				decision_expires_at = CASE WHEN i.release AND i.decision_secs > 0 THEN now() + make_interval(secs => i.decision_secs)
					WHEN i.release THEN NULL ELSE t.decision_expires_at END,
				last_seq = t.last_seq + i.n,
				progress_step = t.progress_step + i.done,
				progress_total = GREATEST(t.progress_total, i.total)
			FROM input i
			WHERE t.id = i.id AND t.lease_token = i.token
			RETURNING t.id, t.state, t.last_seq, i.n, i.events, t.concurrency_key IS NOT NULL AS keyed
		), written_events AS (
			INSERT INTO task_event_batches (task_id, first_seq, last_seq, events)
			SELECT id, last_seq - n + 1, last_seq, events FROM written WHERE n > 0
		), written_steps AS (
			INSERT INTO task_steps AS ts (task_id, idx, name, idempotency_key, state, attempt, compensation_attempt,
				output, error, started_at, finished_at, compensated_at)
			SELECT s.task_id, s.idx, s.name, s.key, s.state, s.attempt, s.comp_attempt, s.output, s.error,
				CASE WHEN s.started THEN now() END, CASE WHEN s.finished THEN now() END, CASE WHEN s.compensated THEN now() END
			FROM unnest($13::uuid[], $14::int[], $15::text[], $16::text[], $17::text[], $18::int[], $19::int[],
				$20::jsonb[], $21::text[], $22::bool[], $23::bool[], $24::bool[])
				AS s(task_id, idx, name, key, state, attempt, comp_attempt, output, error, started, finished, compensated)
			WHERE s.task_id IN (SELECT id FROM written)
			ON CONFLICT (task_id, idx) DO UPDATE SET
				state = excluded.state, attempt = excluded.attempt, compensation_attempt = excluded.compensation_attempt,
				output = COALESCE(excluded.output, ts.output), error = excluded.error,
				-- the first attempt's start: a step's duration spans its retries
				started_at = COALESCE(ts.started_at, excluded.started_at),
				finished_at = COALESCE(excluded.finished_at, ts.finished_at),
				compensated_at = COALESCE(excluded.compensated_at, ts.compensated_at)
		)
		SELECT id, state, last_seq, keyed FROM written`,
		ids, tokens, states, release, errs, results, runAfter, bump, counts, done, total, events,
		st.taskIDs, st.idx, st.names, st.keys, st.states, st.attempts, st.compAttempts, st.outputs, st.errs,
		st.started, st.finished, st.compensated, failedSteps, decisionSecs)
	if err != nil {
		return nil, fmt.Errorf("error writing tasks: %w", interpretError(err))
	}
	defer rows.Close()
	out := make(map[string]Written, n)
	notes := wake.Notes{Events: make([]wake.TaskSeq, 0, n)}
	for rows.Next() {
		var id, state string
		var seq int
		var keyed bool
		if err := rows.Scan(&id, &state, &seq, &keyed); err != nil {
			return nil, fmt.Errorf("error writing tasks: %w", interpretError(err))
		}
		out[id] = Written{State: task.State(state), LastSeq: seq}
		notes.Events = append(notes.Events, wake.TaskSeq{ID: id, Seq: seq})
		// tasks handed back can be claimed at once, and so can the next
		// task of a concurrency key its holder gave up
		notes.Ready = notes.Ready || state == string(task.StatePending) || state == string(task.StateCompensating) ||
			keyed && task.State(state).Terminal()
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error writing tasks: %w", interpretError(err))
	}
	s.wake.Send(notes)
	return out, nil
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
	started, finished, compensated []bool
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
	c.started, c.finished, c.compensated = append(c.started, s.Started), append(c.finished, s.Finished), append(c.compensated, s.Compensated)
}
