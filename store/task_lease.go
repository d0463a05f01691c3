package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"flightdeck/workflow/task"
)

// Lease identifies a claimed task and the token of that claim.
type Lease struct {
	ID    string
	Token string
}

// LeaseStatus is what a heartbeat learns about a held task.
type LeaseStatus struct {
	ID              string
	CancelRequested bool
	DeadlinePassed  bool
}

// TaskHeartbeat renews the leases owner still holds and reports cancels and
// deadlines (the polling backup for NOTIFY). A lease missing from the result
// was lost: its worker must stop writing. Rows locked by a concurrent finish
// are skipped rather than waited on (and reported alive), so a heartbeat
// never deadlocks with a batch finish.
func (s *Store) TaskHeartbeat(ctx context.Context, leases []Lease, lease time.Duration) ([]LeaseStatus, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	ids, tokens := splitLeases(leases)
	rows, err := s.pool.Query(ctx, `
		WITH input AS (
			SELECT * FROM unnest($1::uuid[], $2::uuid[]) AS i(id, token)
		), locked AS (
			SELECT t.id FROM tasks t JOIN input i ON i.id = t.id AND t.lease_token = i.token
			ORDER BY t.id FOR UPDATE OF t SKIP LOCKED
		), renewed AS (
			UPDATE tasks t SET lease_expires_at = now() + make_interval(secs => $3)
			FROM locked WHERE t.id = locked.id
			RETURNING t.id, t.cancel_requested_at IS NOT NULL AS cancel, COALESCE(t.deadline_at < now(), false) AS deadline
		)
		SELECT id, cancel, deadline FROM renewed
		UNION ALL
		-- held but locked by a finish in flight: still ours
		SELECT t.id, false, false FROM tasks t JOIN input i ON i.id = t.id AND t.lease_token = i.token
		WHERE t.id NOT IN (SELECT id FROM renewed)`, ids, tokens, lease.Seconds())
	if err != nil {
		return nil, fmt.Errorf("error renewing leases: %w", interpretError(err))
	}
	defer rows.Close()
	var out []LeaseStatus
	for rows.Next() {
		var st LeaseStatus
		if err := rows.Scan(&st.ID, &st.CancelRequested, &st.DeadlinePassed); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, st)
	}
	return out, interpretError(rows.Err())
}

// Finish ends a worker's hold on a task: its new state, error, result and
// the events that go with it, written only if the lease token still matches.
type Finish struct {
	ID       string
	Token    string
	State    task.State // completed, failed, cancelled, needs_attention, pending (release), awaiting_*…
	Error    *string
	Result   json.RawMessage
	RunAfter *time.Time // with State scheduled: when to run again
	// BumpAttempt counts this run as a failed start (a handler panic), like
	// a worker that died.
	BumpAttempt bool
	Events      []task.Event
	// Steps are step rows the worker still held back (StepSave), written
	// with the outcome.
	Steps []StepSave
}

// finishColumns turns finishes into the parallel arrays unnest wants. Per
// task: its id, new state, error, result and run_after; its events' count,
// the steps they complete and the step total (counted here rather than
// grouped in SQL) and the events as one stored batch; and its step rows.
type finishColumns struct {
	ids, states    []string
	errs           []*string
	results        [][]byte
	runAfter       []*time.Time
	n, done, total []int32
	events         [][]byte
	steps          stepSaveColumns
}

// add appends f, with events as its events (f.Events, or those with a
// claim's event before them).
func (c *finishColumns) add(f Finish, events []task.Event) {
	var result []byte
	if len(f.Result) > 0 {
		result = f.Result
	}
	d, tot := progressOf(events)
	c.ids, c.states, c.errs = append(c.ids, f.ID), append(c.states, string(f.State)), append(c.errs, f.Error)
	c.results, c.runAfter = append(c.results, result), append(c.runAfter, f.RunAfter)
	c.n, c.done, c.total = append(c.n, int32(len(events))), append(c.done, int32(d)), append(c.total, int32(tot))
	c.events = append(c.events, eventsJSON(events))
	for _, st := range f.Steps {
		c.steps.add(f.ID, st)
	}
}

// TaskFinish applies many finishes in one statement and returns the ids it
// applied; a finish whose lease was taken over is left out (the stale owner
// writes nothing). Each task's events get its next seqs, in order.
func (s *Store) TaskFinish(ctx context.Context, fs []Finish) (map[string]bool, error) {
	if len(fs) == 0 {
		return nil, nil
	}
	var c finishColumns
	tokens, bump := make([]string, len(fs)), make([]bool, len(fs))
	for i, f := range fs {
		c.add(f, f.Events)
		tokens[i], bump[i] = f.Token, f.BumpAttempt
	}
	args := append([]any{c.ids, tokens, c.states, c.errs, c.results, c.runAfter, bump, c.n, c.done, c.total, c.events},
		c.steps.args()...)
	rows, err := s.pool.Query(ctx, `
		WITH input AS (
			SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::jsonb[], $6::timestamptz[], $7::bool[],
				$8::int[], $9::int[], $10::int[], $11::text[])
				AS i(id, token, state, error, result, run_after, bump, n, done, total, events)
		), upd AS (
			UPDATE tasks t SET
				state = i.state,
				-- a cancel keeps the reason recorded when it was asked for
				error = CASE WHEN i.state = 'cancelled' THEN COALESCE(t.error, i.error) ELSE COALESCE(i.error, t.error) END,
				result = COALESCE(i.result, t.result),
				run_after = i.run_after,
				attempt = t.attempt + CASE WHEN i.bump THEN 1 ELSE 0 END,
				finished_at = CASE WHEN i.state IN ('completed', 'failed', 'cancelled') THEN now() END,
				lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
				last_seq = t.last_seq + i.n,
				progress_step = t.progress_step + i.done,
				progress_total = GREATEST(t.progress_total, i.total)
			FROM input i
			WHERE t.id = i.id AND t.lease_token = i.token
			RETURNING t.id, t.state, t.last_seq, i.n, i.events
		), ins AS (
			`+insertBatchesSQL("upd")+`
		), steps AS (
			`+upsertStepsSQL("upd", 12)+`
		)
		SELECT id, state, last_seq FROM upd`, args...)
	if err != nil {
		return nil, fmt.Errorf("error finishing tasks: %w", interpretError(err))
	}
	defer rows.Close()
	applied := make(map[string]bool, len(fs))
	notes := make([][2]string, 0, len(fs)+1)
	ready := false
	for rows.Next() {
		var id, state string
		var seq int
		if err := rows.Scan(&id, &state, &seq); err != nil {
			return nil, interpretError(err)
		}
		applied[id] = true
		notes = append(notes, eventsNote(id, seq))
		// released or re-queued tasks can be claimed at once
		ready = ready || state == string(task.StatePending) || state == string(task.StateCompensating)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	if ready {
		notes = append(notes, requeueNote)
	}
	s.wake.wake(notes...)
	return applied, nil
}

// TaskRescue re-queues tasks whose lease expired (their worker died or lost
// the database): attempt + 1 and back to claimable, or failed once
// max_attempts starts are used up. Expiry is judged by the database clock.
func (s *Store) TaskRescue(ctx context.Context, limit int) (int, error) {
	lost := stateEventSQL(`'task.state'`, `'log'`,
		`'Worker lost; ' || CASE WHEN state = 'failed' THEN 'no attempts left' ELSE 'queued again' END`,
		`json_build_object('state', state, 'attempt', attempt)`)
	row := s.pool.QueryRow(ctx, `
		WITH expired AS (
			SELECT id FROM tasks
			WHERE lease_expires_at < now()
			ORDER BY lease_expires_at
			LIMIT $1
			FOR UPDATE SKIP LOCKED
		), upd AS (
			UPDATE tasks t SET
				state = CASE
					WHEN t.state = 'compensating' THEN 'compensating'
					WHEN t.attempt >= t.max_attempts THEN 'failed'
					ELSE 'pending' END,
				attempt = t.attempt + 1,
				error = CASE WHEN t.state <> 'compensating' AND t.attempt >= t.max_attempts
					THEN 'worker lost ' || t.attempt || ' time(s); max_attempts reached' ELSE t.error END,
				finished_at = CASE WHEN t.state <> 'compensating' AND t.attempt >= t.max_attempts THEN now() END,
				lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
				last_seq = t.last_seq + CASE WHEN t.state <> 'compensating' AND t.attempt >= t.max_attempts THEN 2 ELSE 1 END
			FROM expired WHERE t.id = expired.id
			RETURNING t.id, t.state, t.attempt, t.last_seq
		), ev AS (
			INSERT INTO task_event_batches (task_id, first_seq, last_seq, events)
			SELECT id, CASE WHEN state = 'failed' THEN last_seq - 1 ELSE last_seq END, last_seq,
				CASE WHEN state = 'failed' THEN `+eventsSQL(lost,
		stateEventSQL(`'task.failed'`, `'error'`, `'Task failed: worker lost too many times'`, `json_build_object('state', state)`))+`
				ELSE `+eventsSQL(lost)+` END
			FROM upd
		)
		SELECT count(*),
			CASE WHEN count(*) > 0 THEN pg_notify('task_ready', 'requeue') END,
			CASE WHEN count(*) > 0 THEN pg_notify('task_events', string_agg(id::text || ':' || last_seq, ',')) END
		FROM upd`, limit)
	var n int
	var ignore1, ignore2 *string
	if err := row.Scan(&n, &ignore1, &ignore2); err != nil {
		return 0, fmt.Errorf("error rescuing tasks: %w", interpretError(err))
	}
	return n, nil
}

func splitLeases(leases []Lease) (ids, tokens []string) {
	ids, tokens = make([]string, len(leases)), make([]string, len(leases))
	for i, l := range leases {
		ids[i], tokens[i] = l.ID, l.Token
	}
	return ids, tokens
}
