package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/internal/notify"
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
	PauseRequested  bool
}

// TaskHeartbeat renews the leases owner still holds and reports cancels,
// pause requests and deadlines (the polling backup for NOTIFY). A lease missing from the result
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
			RETURNING t.id, t.cancel_requested_at IS NOT NULL AS cancel, COALESCE(t.deadline_at < now(), false) AS deadline,
				t.pause_requested_at IS NOT NULL AS pause
		)
		SELECT id, cancel, deadline, pause FROM renewed
		UNION ALL
		-- held but locked by a finish in flight: still ours
		SELECT t.id, false, false, false FROM tasks t JOIN input i ON i.id = t.id AND t.lease_token = i.token
		WHERE t.id NOT IN (SELECT id FROM renewed)`, ids, tokens, lease.Seconds())
	if err != nil {
		return nil, fmt.Errorf("error renewing leases: %w", interpretError(err))
	}
	defer rows.Close()
	var out []LeaseStatus
	for rows.Next() {
		var st LeaseStatus
		if err := rows.Scan(&st.ID, &st.CancelRequested, &st.DeadlinePassed, &st.PauseRequested); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, st)
	}
	return out, interpretError(rows.Err())
}

// Stale is a task a maintenance sweep found: what deciding its fate needs.
type Stale struct {
	ID          string
	Token       string // the lease it held ("" for none)
	State       task.State
	Attempt     int
	MaxAttempts int
}

// TaskRescue finds up to limit tasks whose lease expired (their worker
// died or lost the database; expiry by the database clock) and applies
// what decide makes of each, in one transaction that locked them.
func (s *Store) TaskRescue(ctx context.Context, limit int, decide func(Stale) TaskWrite) (int, error) {
	return s.sweep(ctx, `
		SELECT id, COALESCE(lease_token::text, '') AS token, state, attempt, max_attempts FROM tasks
		WHERE lease_expires_at < now()
		ORDER BY lease_expires_at
		LIMIT $1
		FOR UPDATE SKIP LOCKED`, limit, decide)
}

// TaskDeadlineSweep finds up to limit pending tasks that never started and
// whose deadline passed, and applies what decide makes of each.
func (s *Store) TaskDeadlineSweep(ctx context.Context, limit int, decide func(Stale) TaskWrite) (int, error) {
	return s.sweep(ctx, `
		SELECT id, '' AS token, state, attempt, max_attempts FROM tasks
		WHERE state = 'pending' AND deadline_at < now() AND started_at IS NULL
		LIMIT $1
		FOR UPDATE SKIP LOCKED`, limit, decide)
}

// sweep locks the tasks query finds and applies decide's writes to them
// in the same transaction.
func (s *Store) sweep(ctx context.Context, query string, limit int, decide func(Stale) TaskWrite, args ...any) (int, error) {
	n := 0
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, query, append([]any{limit}, args...)...)
		if err != nil {
			return interpretError(err)
		}
		found, err := pgx.CollectRows(rows, pgx.RowToStructByName[staleRow])
		if err != nil {
			return interpretError(err)
		}
		if len(found) == 0 {
			return nil
		}
		ws := make([]TaskWrite, len(found))
		for i, f := range found {
			ws[i] = decide(Stale{ID: f.ID, Token: f.Token, State: task.State(f.State), Attempt: f.Attempt, MaxAttempts: f.MaxAttempts})
		}
		written, err := taskApplyTx(ctx, tx, ws...)
		n = len(written)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("error sweeping tasks: %w", err)
	}
	return n, nil
}

type staleRow struct {
	ID          string `db:"id"`
	Token       string `db:"token"`
	State       string `db:"state"`
	Attempt     int    `db:"attempt"`
	MaxAttempts int    `db:"max_attempts"`
}

// collectSeqs reads rows of (task id, last seq) as the wake-up that says
// those tasks have new events.
func collectSeqs(rows pgx.Rows) (notify.Notes, error) {
	defer rows.Close()
	var n notify.Notes
	for rows.Next() {
		var ts notify.TaskSeq
		if err := rows.Scan(&ts.ID, &ts.Seq); err != nil {
			return notify.Notes{}, interpretError(err)
		}
		n.Events = append(n.Events, ts)
	}
	return n, interpretError(rows.Err())
}

func splitLeases(leases []Lease) (ids, tokens []string) {
	ids, tokens = make([]string, len(leases)), make([]string, len(leases))
	for i, l := range leases {
		ids[i], tokens[i] = l.ID, l.Token
	}
	return ids, tokens
}
