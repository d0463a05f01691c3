package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"flightdeck/workflow/task"
)

// claimableWhere must match tasks_claim_idx's predicate so the claim walks
// the index in ORDER BY order.
const claimableWhere = `lease_owner IS NULL AND state IN ('pending', 'compensating')`

// A claim is one transaction in two round trips (invariant 2 still holds:
// one owner at a time):
//
//  1. TaskClaimOpen locks up to limit claimable tasks, highest priority
//     first, then oldest (FOR NO KEY UPDATE SKIP LOCKED: concurrent
//     claimers pass each other without waiting and never take the same
//     row; inserts of rows that reference a task are not blocked).
//  2. The caller may finish some of them at once, without a lease: a task
//     whose handler needs no write of its own (a pipeline of effect-free
//     steps) runs while its row is locked, and the row lock is its lease.
//     ClaimTx.Commit then gives every other task a lease (a new token and
//     an expiry from the database clock) and writes the finished ones'
//     outcomes, steps and events, in one statement, and commits.
//
// A task finished at once is written once instead of twice (claimed, then
// finished), with one event batch instead of two. If the worker dies before
// the commit, nothing of it happened: the lock goes with the connection and
// the task is claimable again at once, with no lease to wait out.
type ClaimTx struct {
	s    *Store
	conn *pgxpool.Conn
	// Tasks are the locked tasks as a claim leaves them: state running
	// (pending ones) or compensating, attempt at least 1, started_at set,
	// LastSeq the seq of the claim's event, real params (secrets merged);
	// FirstRun says whether any worker had run them before. LeaseToken is
	// empty until Commit leases them.
	Tasks []*task.Task
	// At is the database clock when the claim began (its now()): every
	// task submitted by a transaction that began before At minus the
	// longest submit transaction was visible to it (see ClaimKey).
	At time.Time
}

// TaskClaimOpen begins a claim (see ClaimTx). With no task to claim it
// returns a nil ClaimTx and no error.
//
// The claimed tasks' Params are the real ones: the public params with the
// secret params (secret_params) merged over their "[REDACTED]" stand-ins.
// Only the claimer gets them this way; every other read (TaskGet,
// TaskList, TaskGetMany) returns the public params.
func (s *Store) TaskClaimOpen(ctx context.Context, limit int, after *ClaimKey) (*ClaimTx, error) {
	from := ClaimKey{ID: zeroUUID} // before every task
	if after != nil {
		from = *after
		if from.ID == "" {
			from.ID = zeroUUID
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("error claiming tasks: %w", interpretError(err))
	}
	c := &ClaimTx{s: s, conn: conn}
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	// The claim's two statements have one good plan whatever their
	// parameters (index scans by key); without this PostgreSQL plans them
	// afresh on every execution, as custom plans look cheaper for arrays.
	b.Queue(`SET LOCAL plan_cache_mode = force_generic_plan`)
	b.Queue(`
		WITH above AS (
			SELECT * FROM tasks
			WHERE `+claimableWhere+` AND priority < $2
			ORDER BY priority, created_at, id
			LIMIT $1
			FOR NO KEY UPDATE SKIP LOCKED
		), after AS (
			SELECT * FROM tasks
			WHERE `+claimableWhere+` AND (priority, created_at, id) > ($2, $3, $4)
			ORDER BY priority, created_at, id
			LIMIT $1
			FOR NO KEY UPDATE SKIP LOCKED
		), picked AS (
			-- rows locked here but not picked are left as they were
			SELECT * FROM above UNION ALL SELECT * FROM after
			ORDER BY priority, created_at, id
			LIMIT $1
		)
		SELECT t.id, t.team_id, '', t.kind, t.pipeline, t.params || COALESCE(t.secret_params, '{}'), t.prompt, t.priority,
			CASE WHEN t.state = 'pending' THEN 'running' ELSE t.state END, GREATEST(t.attempt, 1), t.max_attempts,
			t.created_by, '', t.created_at, COALESCE(t.started_at, now()), t.finished_at, t.deadline_at,
			t.cancel_requested_at IS NOT NULL, t.error, t.result, t.last_seq + 1, t.progress_step, t.progress_total,
			t.started_at IS NULL, now()
		FROM picked t -- team names and emails come from s.names
		ORDER BY t.priority, t.created_at, t.id`, limit, int16(from.Priority), from.CreatedAt, from.ID)
	br := conn.SendBatch(ctx, b)
	_, err = br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		err = func() error {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				t, err := scanTaskWith(rows, func(t *task.Task) []any { return []any{&t.FirstRun, &c.At} })
				if err != nil {
					return err
				}
				c.Tasks = append(c.Tasks, t)
			}
			return rows.Err()
		}()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		c.Rollback()
		return nil, fmt.Errorf("error claiming tasks: %w", interpretError(err))
	}
	if len(c.Tasks) == 0 {
		c.Rollback()
		return nil, nil
	}
	if err := s.names.fill(ctx, conn, c.Tasks); err != nil {
		c.Rollback()
		return nil, fmt.Errorf("error claiming tasks: %w", err)
	}
	return c, nil
}

// ClaimKey is a place in the claim order (priority, created_at, id).
//
// A claim walks tasks_claim_idx from its start, and until VACUUM removes
// them, the entries of every task claimed since lie there: on a long
// backlog the walk grows with each claim. A claimer that passes a key
// (about where its last claim ended) starts its walk there instead, and
// still sees every task of a higher priority. What it skips (a task handed
// back or re-prioritised, an insert that committed late, a claim rolled
// back) is found by its next claim without a key, which it must make often
// (the pool: every poll interval, and at once on a requeue wake-up). ID ""
// means before every task of that priority and time.
type ClaimKey struct {
	Priority  task.Priority
	CreatedAt time.Time
	ID        string
}

// Before reports whether k comes before o in the claim order. Ids compare
// as PostgreSQL compares uuids (canonical lower-case text sorts the same).
func (k ClaimKey) Before(o ClaimKey) bool {
	if k.Priority != o.Priority {
		return k.Priority < o.Priority
	}
	if !k.CreatedAt.Equal(o.CreatedAt) {
		return k.CreatedAt.Before(o.CreatedAt)
	}
	return k.ID < o.ID
}

// KeyOf is t's place in the claim order.
func KeyOf(t *task.Task) ClaimKey {
	return ClaimKey{Priority: t.Priority, CreatedAt: t.CreatedAt, ID: t.ID}
}

// claimEvent is the event of a claim, written by SQL for leased tasks and
// by Commit for tasks finished at once; the two must say the same.
const claimEventMessage = "Picked up by a worker"

func claimEvent(t *task.Task, owner string) task.Event {
	// {"state":…,"attempt":…,"worker":…} without reflection: one per task
	// finished inside a claim. States are plain words.
	data := make([]byte, 0, 64+len(owner))
	data = append(data, `{"state":"`...)
	data = append(data, t.State...)
	data = append(data, `","attempt":`...)
	data = strconv.AppendInt(data, int64(t.Attempt), 10)
	data = append(data, `,"worker":`...)
	data = append(appendJSONString(data, owner), '}')
	return task.Event{Type: task.EventTaskState, Status: task.StatusLog, Message: claimEventMessage, Data: data}
}

// Commit ends the claim: each task in leased gets owner's lease (its
// LeaseToken is set), each of done (tasks of c.Tasks run to an outcome;
// Token is ignored) gets its outcome, steps and events after the claim's
// event, and the rest are left as they were (the claim's event may be put
// into the spare capacity of a Finish's Events). done must hold only first
// runs (FirstRun: no step rows yet) whose outcome is terminal or parked
// without a worker. On error
// nothing was written, unless the commit itself was lost on the way (then
// leased tasks come back when their lease expires and finished ones were
// either written or are claimable again).
func (c *ClaimTx) Commit(ctx context.Context, owner string, lease time.Duration, leased []*task.Task, done []Finish) error {
	defer c.Rollback()
	byID := make(map[string]*task.Task, len(c.Tasks))
	for _, t := range c.Tasks {
		byID[t.ID] = t
	}
	leaseIDs := make([]string, len(leased))
	for i, t := range leased {
		leaseIDs[i] = t.ID
	}
	var fin finishColumns
	for _, f := range done {
		t := byID[f.ID]
		if t == nil {
			return fmt.Errorf("error finishing claimed tasks: task %s is not part of this claim", f.ID)
		}
		if !t.FirstRun {
			// only a first run has no step rows yet (newStepsSQL)
			return fmt.Errorf("error finishing claimed tasks: task %s ran before; lease it instead", f.ID)
		}
		// The claim's event goes first; f.Events' spare room (the pool
		// leaves some) takes it without a copy to a new array.
		fin.add(f, slices.Insert(f.Events, 0, claimEvent(t, owner)))
	}
	args := append([]any{leaseIDs, owner, lease.Seconds(), fin.ids, fin.states, fin.errs, fin.results, fin.runAfter, fin.n, fin.done, fin.total, fin.events},
		fin.steps.args()...)
	b := &pgx.Batch{}
	b.Queue(`
		WITH leased AS (
			UPDATE tasks t SET
				state = CASE WHEN t.state = 'pending' THEN 'running' ELSE t.state END,
				attempt = GREATEST(t.attempt, 1),
				lease_owner = $2,
				lease_token = gen_random_uuid(),
				lease_expires_at = now() + make_interval(secs => $3),
				started_at = COALESCE(t.started_at, now()),
				last_seq = t.last_seq + 1
			WHERE t.id = ANY($1::uuid[])
			RETURNING t.id, t.state, t.attempt, t.lease_owner, t.lease_token, t.last_seq
		), leased_events AS (
			INSERT INTO task_event_batches (task_id, first_seq, last_seq, events)
			SELECT id, last_seq, last_seq, `+eventsSQL(stateEventSQL(`'task.state'`, `'log'`, `'`+claimEventMessage+`'`,
		`json_build_object('state', state, 'attempt', attempt, 'worker', lease_owner)`))+`
			FROM leased
		), input AS (
			SELECT * FROM unnest($4::uuid[], $5::text[], $6::text[], $7::jsonb[], $8::timestamptz[], $9::int[], $10::int[], $11::int[], $12::text[])
				AS i(id, state, error, result, run_after, n, done, total, events)
		), finished AS (
			UPDATE tasks t SET
				state = i.state,
				error = COALESCE(i.error, t.error),
				result = COALESCE(i.result, t.result),
				run_after = i.run_after,
				attempt = GREATEST(t.attempt, 1),
				started_at = COALESCE(t.started_at, now()),
				-- now() is when the claim began; the task ended just now
				finished_at = CASE WHEN i.state IN ('completed', 'failed', 'cancelled') THEN clock_timestamp() END,
				last_seq = t.last_seq + i.n,
				progress_step = t.progress_step + i.done,
				progress_total = GREATEST(t.progress_total, i.total)
			FROM input i WHERE t.id = i.id
			RETURNING t.id, t.last_seq, i.n, i.events
		), finished_events AS (
			`+insertBatchesSQL("finished")+`
		), steps AS (
			`+newStepsSQL("finished", 13)+`
		)
		SELECT id, lease_token, last_seq FROM leased
		UNION ALL
		SELECT id, NULL, last_seq FROM finished`, args...)
	b.Queue(`COMMIT`)
	br := c.conn.SendBatch(ctx, b)
	notes := make([][2]string, 0, len(leased)+len(done))
	tokens := make(map[string]string, len(leased))
	err := func() error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var token *string
			var seq int
			if err := rows.Scan(&id, &token, &seq); err != nil {
				return err
			}
			if token != nil {
				tokens[id] = *token
			}
			notes = append(notes, eventsNote(id, seq))
		}
		return rows.Err()
	}()
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("error committing the claim: %w", interpretError(err))
	}
	for _, t := range leased {
		t.LeaseToken = tokens[t.ID]
	}
	c.s.wake.wake(notes...)
	return nil
}

// Rollback ends the claim without a change (every lock is released) and
// gives the connection back; after Commit it does nothing.
func (c *ClaimTx) Rollback() {
	if c == nil || c.conn == nil {
		return
	}
	conn := c.conn
	c.conn = nil
	if conn.Conn().PgConn().TxStatus() != 'I' {
		// A connection that cannot roll back is closed by Release (it is
		// not idle), which ends the transaction too.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = conn.Exec(ctx, `ROLLBACK`)
		cancel()
	}
	conn.Release()
}

// TaskClaim claims up to limit tasks for owner and leases them all (see
// ClaimTx for the order and the guarantees).
func (s *Store) TaskClaim(ctx context.Context, owner string, limit int, lease time.Duration) ([]*task.Task, error) {
	c, err := s.TaskClaimOpen(ctx, limit, nil)
	if err != nil || c == nil {
		return nil, err
	}
	if err := c.Commit(ctx, owner, lease, c.Tasks, nil); err != nil {
		return nil, err
	}
	return c.Tasks, nil
}
