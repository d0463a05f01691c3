package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/internal/wake"
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

// TaskRescue re-queues tasks whose lease expired (their worker died or lost
// the database): attempt + 1 and back to claimable, or failed once
// max_attempts starts are used up. Expiry is judged by the database clock.
func (s *Store) TaskRescue(ctx context.Context, limit int) (int, error) {
	rows, err := s.pool.Query(ctx, `
		WITH expired AS (
			SELECT id FROM tasks
			WHERE lease_expires_at < now()
			ORDER BY lease_expires_at
			LIMIT $1
			FOR UPDATE SKIP LOCKED
		), rescued AS (
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
		), rescue_events AS (
			INSERT INTO task_event_batches (task_id, first_seq, last_seq, events)
			SELECT id, CASE WHEN state = 'failed' THEN last_seq - 1 ELSE last_seq END, last_seq,
				jsonb_build_array(flightdeck_event('task.state', 'log',
					'Worker lost; ' || CASE WHEN state = 'failed' THEN 'no attempts left' ELSE 'queued again' END,
					jsonb_build_object('state', state, 'attempt', attempt)))
				|| CASE WHEN state = 'failed' THEN jsonb_build_array(flightdeck_event('task.failed', 'error',
					'Task failed: worker lost too many times', jsonb_build_object('state', state)))
				ELSE '[]' END
			FROM rescued
		)
		SELECT id, last_seq FROM rescued`, limit)
	if err != nil {
		return 0, fmt.Errorf("error rescuing tasks: %w", interpretError(err))
	}
	notes, err := collectSeqs(rows)
	if err != nil {
		return 0, fmt.Errorf("error rescuing tasks: %w", err)
	}
	notes.Ready = len(notes.Events) > 0
	s.wake.Send(notes)
	return len(notes.Events), nil
}

// collectSeqs reads rows of (task id, last seq) as the wake-up that says
// those tasks have new events.
func collectSeqs(rows pgx.Rows) (wake.Notes, error) {
	defer rows.Close()
	var n wake.Notes
	for rows.Next() {
		var ts wake.TaskSeq
		if err := rows.Scan(&ts.ID, &ts.Seq); err != nil {
			return wake.Notes{}, interpretError(err)
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
