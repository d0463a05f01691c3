package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/workflow/task"
)

// Claimed is a task a claim leased to a worker, with the step rows its
// earlier runs left (none for a task never run).
type Claimed struct {
	Task  *task.Task
	Steps []StepRow
	// Traceparent is the submit's W3C trace context ("" for none): the
	// run's span links to it (contract §8).
	Traceparent string
}

// TaskClaim leases up to limit claimable tasks to owner in one statement,
// highest priority first, then oldest: FOR NO KEY UPDATE SKIP LOCKED lets
// concurrent claimers pass each other without waiting and never take the
// same row. Each task gets a new lease token and an expiry from the database
// clock (invariant 2) and pending ones become running. The claim writes no
// event: its task.state event goes with the worker's first write
// (invariant 6's one exception, which keeps the claim one row's update).
//
// The claimed tasks' Params are the real ones: the public params with the
// secret params (secret_params) merged over their "[REDACTED]" stand-ins.
// Only the claimer gets them this way; every other read (TaskGet,
// TaskList, TaskGetMany) returns the public params.
func (s *Store) TaskClaim(ctx context.Context, owner string, limit int, lease time.Duration) ([]Claimed, error) {
	rows, err := s.pool.Query(ctx, `
		WITH candidates AS (
			-- the predicate is tasks_claim_idx's, so the walk is that index in
			-- order; a task whose concurrency key another task holds waits
			-- (holding no worker, and holding back no task of another key).
			-- The key's holder is read once, here: firsts needs to know
			-- whether the candidate is it.
			SELECT t.id, t.team_id, t.concurrency_key, t.priority, t.created_at, h.task_id = t.id AS holds_key FROM tasks t
				LEFT JOIN concurrency_holds h ON t.concurrency_key IS NOT NULL
					AND h.team_id = t.team_id AND h.key = t.concurrency_key
			WHERE t.lease_owner IS NULL AND t.state IN `+claimableStates+`
				AND (h.task_id IS NULL OR h.task_id = t.id)
			ORDER BY t.priority, t.created_at, t.id
			LIMIT $2
			FOR NO KEY UPDATE OF t SKIP LOCKED
		), firsts AS (
			-- of the candidates that share a key, the first in claim order,
			-- and only if it holds the key already or no earlier task of its
			-- key could be claimed: one locked by a racing claim is skipped
			-- above, and must not be overtaken (only keyed candidates are
			-- sorted for this). An earlier task blocked by a hold is blocked
			-- by this candidate's own (a candidate's key is free or its own),
			-- so "holds the key" is the whole of that case.
			SELECT id, team_id, concurrency_key FROM (
				SELECT c.*, row_number() OVER (PARTITION BY team_id, concurrency_key ORDER BY priority, created_at, id) AS n
				FROM candidates c WHERE concurrency_key IS NOT NULL) x
			WHERE n = 1 AND (holds_key OR NOT EXISTS (
				SELECT 1 FROM tasks e
				WHERE e.team_id = x.team_id AND e.concurrency_key = x.concurrency_key
					AND e.state IN `+claimableStates+` AND e.lease_owner IS NULL
					AND (e.priority, e.created_at, e.id) < (x.priority, x.created_at, x.id)))
		), holds AS (
			-- taking a key is inserting its row: of two claims racing for
			-- one key, the second finds it taken (and waits for the first
			-- to commit to see it); a task that already holds its key keeps it
			INSERT INTO concurrency_holds AS h (team_id, key, task_id)
			SELECT team_id, concurrency_key, id FROM firsts
			ON CONFLICT (team_id, key) DO UPDATE SET task_id = excluded.task_id WHERE h.task_id = excluded.task_id
			RETURNING task_id
		), picked AS (
			SELECT id FROM candidates WHERE concurrency_key IS NULL
			UNION ALL SELECT task_id FROM holds
		), claimed AS (
			UPDATE tasks t SET
				state = CASE WHEN t.state = 'pending' THEN 'running' ELSE t.state END,
				attempt = GREATEST(t.attempt, 1),
				lease_owner = $1,
				lease_token = gen_random_uuid(),
				lease_expires_at = now() + make_interval(secs => $3),
				started_at = COALESCE(t.started_at, now())
			FROM picked WHERE t.id = picked.id
			RETURNING t.*
		)
		SELECT t.id, t.team_id, t.kind, t.pipeline, t.params || COALESCE(t.secret_params, '{}') AS params, t.prompt,
			t.priority, t.state, t.attempt, t.max_attempts, t.created_by, t.created_at, t.started_at, t.finished_at,
			t.deadline_at, t.cancel_requested_at IS NOT NULL AS cancel_requested, t.error, t.result, t.last_seq,
			t.progress_step, t.progress_total, t.rerun_of, t.pause_requested_at IS NOT NULL AS pause_requested,
			t.failed_step, t.decision_expires_at, t.environment, t.promoted_from, t.override, t.lease_token,
			COALESCE(t.traceparent, '') AS traceparent, t.run_after AS run_at, st.*
		FROM claimed t -- team names and emails come from s.names
		-- the step rows as parallel arrays, in step order (the primary key's)
		LEFT JOIN LATERAL (SELECT array_agg(s.idx) AS step_idx, array_agg(s.name) AS step_name,
				array_agg(s.state) AS step_state, array_agg(s.attempt) AS step_attempt,
				array_agg(s.idempotency_key) AS step_key, array_agg(s.output) AS step_output,
				array_agg(s.error) AS step_error, array_agg(s.started_at) AS step_started_at,
				array_agg(s.finished_at) AS step_finished_at, array_agg(s.compensation_attempt) AS step_comp_attempt,
				array_agg(s.compensated_at) AS step_compensated_at
			-- agent tasks keep no step rows: no look for them
			FROM (SELECT * FROM task_steps s WHERE t.kind = 'deploy' AND s.task_id = t.id ORDER BY s.idx) s) st ON true
		ORDER BY t.priority, t.created_at, t.id`, owner, limit, lease.Seconds())
	if err != nil {
		return nil, fmt.Errorf("error claiming tasks: %w", interpretError(err))
	}
	crs, err := pgx.CollectRows(rows, pgx.RowToStructByNameLax[claimRow])
	if err != nil {
		return nil, fmt.Errorf("error claiming tasks: %w", interpretError(err))
	}
	out := make([]Claimed, len(crs))
	for i := range crs {
		t, err := crs[i].task()
		if err != nil {
			return nil, fmt.Errorf("error claiming tasks: %w", err)
		}
		t.LeaseToken = crs[i].LeaseToken
		out[i] = Claimed{Task: t, Traceparent: crs[i].Traceparent, Steps: crs[i].rows()}
	}
	if len(out) == 0 {
		return nil, nil
	}
	tasks := make([]*task.Task, len(out))
	for i, c := range out {
		tasks[i] = c.Task
	}
	if err := s.names.fill(ctx, s.pool, tasks); err != nil {
		return nil, fmt.Errorf("error claiming tasks: %w", err)
	}
	return out, nil
}

// claimRow is a claimed task's row: its columns (all of taskRow's but the
// team's name and the creator's email, which come from s.names), its lease
// and its step rows. Lax: the claim does not read every taskRow column.
type claimRow struct {
	taskRow
	LeaseToken  string `db:"lease_token"`
	Traceparent string `db:"traceparent"`
	stepColumnsArrays
}

// stepColumnsArrays receives step rows as one array per column (a claim's
// lateral array_agg): cheaper to build and read than a JSON object per row.
type stepColumnsArrays struct {
	Idx         []int32      `db:"step_idx"`
	Name        []string     `db:"step_name"`
	State       []string     `db:"step_state"`
	Attempt     []int32      `db:"step_attempt"`
	Key         []string     `db:"step_key"`
	Output      [][]byte     `db:"step_output"`
	Errs        []*string    `db:"step_error"`
	Started     []*time.Time `db:"step_started_at"`
	Finished    []*time.Time `db:"step_finished_at"`
	CompAttempt []int32      `db:"step_comp_attempt"`
	Comped      []*time.Time `db:"step_compensated_at"`
}

// rows zips the arrays back into rows (nil for a task without any).
func (a *stepColumnsArrays) rows() []StepRow {
	if len(a.Idx) == 0 {
		return nil
	}
	out := make([]StepRow, len(a.Idx))
	for i := range out {
		out[i] = StepRow{Idx: int(a.Idx[i]), Name: a.Name[i], State: task.StepState(a.State[i]), Attempt: int(a.Attempt[i]),
			IdempotencyKey: a.Key[i], Error: a.Errs[i], StartedAt: a.Started[i], FinishedAt: a.Finished[i],
			CompensationAttempt: int(a.CompAttempt[i]), CompensatedAt: a.Comped[i]}
		if len(a.Output[i]) > 0 {
			out[i].Output = a.Output[i]
		}
		for _, p := range []*time.Time{out[i].StartedAt, out[i].FinishedAt, out[i].CompensatedAt} {
			if p != nil {
				utc(p)
			}
		}
	}
	return out
}
