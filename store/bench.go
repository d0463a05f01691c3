package store

import (
	"context"
	"time"
)

// TaskCountUnfinished counts tasks among ids that have not ended.
func (s *Store) TaskCountUnfinished(ctx context.Context, ids []string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE id = ANY($1) AND finished_at IS NULL`, ids).Scan(&n)
	return n, interpretError(err)
}

// Latency holds percentiles in milliseconds, measured with the database
// clock on both ends (created_at, started_at, finished_at).
type Latency struct {
	ClaimP50, ClaimP99, DoneP99 float64
}

// TaskLatency measures insert→claim and insert→done over ids.
func (s *Store) TaskLatency(ctx context.Context, ids []string) (Latency, error) {
	var l Latency
	err := s.pool.QueryRow(ctx, `
		SELECT
			COALESCE(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - created_at)), 0) * 1000,
			COALESCE(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - created_at)), 0) * 1000,
			COALESCE(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)), 0) * 1000
		FROM tasks WHERE id = ANY($1) AND started_at IS NOT NULL`, ids).Scan(&l.ClaimP50, &l.ClaimP99, &l.DoneP99)
	return l, interpretError(err)
}

// BenchFillParams say what BenchFill makes: tasks From..To (1-based) of
// Total, created evenly over Span up to End, of one team.
type BenchFillParams struct {
	TeamID, UserID  string
	From, To, Total int
	End             time.Time
	Span            time.Duration
	UnfinishedTail  int // the newest this many tasks have not ended
}

// BenchFill inserts tasks as years of use would have left them, in one
// statement (bench pages): a third web-service deploys (20 apps, staging and
// production; 88% completed, 7% failed, 5% cancelled; production ones
// waited for an approval), a third noop, the rest health checks, canary
// rollouts, agent tasks and approval demos; each task has its events in one
// batch and web-service deploys their four steps. The rollup triggers see
// them like any other write, so call it in time order.
func (s *Store) BenchFill(ctx context.Context, p BenchFillParams) error {
	_, err := s.pool.Exec(ctx, `
		WITH g AS (
			SELECT i, (i::bigint * 2654435761) % 1000 AS h,
			       $6::timestamptz - $7::interval + ($7::interval * i / $5) AS created
			FROM generate_series($3::int, $4::int) AS i
		), spec AS (
			SELECT i, h, created,
			       CASE i % 3 WHEN 0 THEN 'web-service' WHEN 1 THEN 'noop'
			            ELSE (ARRAY['health-check', 'canary', 'agent', 'approval-demo'])[1 + (i / 3) % 4] END AS pipeline,
			       CASE WHEN i > $5 - $8 THEN (ARRAY['pending', 'running', 'awaiting_approval', 'pending', 'needs_attention'])[1 + i % 5]
			            WHEN h < 880 THEN 'completed' WHEN h < 950 THEN 'failed' ELSE 'cancelled' END AS state,
			       'app' || (i / 3) % 20 AS app, CASE WHEN h % 4 = 0 THEN 'production' ELSE 'staging' END AS env,
			       make_interval(secs => 20 + (h * 7) % 280) AS run,
			       CASE WHEN i % 3 = 0 AND h % 4 = 0 THEN make_interval(mins => (1 + h % 30)::int) ELSE interval '0' END AS waited
			FROM g
		), rows AS (
			SELECT *,
			       (lpad(to_hex((extract(epoch FROM created) * 1000)::bigint), 12, '0') || '7' || substr(md5(i::text), 1, 3)
			        || '8' || substr(md5(i::text), 4, 15))::uuid AS id,
			       CASE WHEN state = 'pending' THEN NULL ELSE created + interval '2 seconds' END AS started,
			       CASE WHEN state IN `+terminalStates+` THEN created + interval '2 seconds' + run + waited END AS finished
			FROM spec
		), ins AS (
			INSERT INTO tasks (id, team_id, created_by, kind, pipeline, params, state, attempt, created_at, started_at, finished_at,
			                   error, waited_ms, concurrency_key, target_key, progress_step, progress_total, last_seq)
			SELECT id, $1, $2, CASE WHEN pipeline = 'agent' THEN 'agent' ELSE 'deploy' END,
			       CASE WHEN pipeline = 'agent' THEN '' ELSE pipeline END,
			       CASE pipeline WHEN 'web-service' THEN jsonb_build_object('app', app, 'env', env, 'version', '1.' || i, 'replicas', 1)
			                     WHEN 'health-check' THEN jsonb_build_object('port', 8000 + i % 50, 'path', '/healthz', 'status', 200)
			                     WHEN 'canary' THEN jsonb_build_object('version', '2.' || i, 'regions', jsonb_build_array('eu-west-1'))
			                     ELSE '{}'::jsonb END,
			       state, CASE WHEN started IS NULL THEN 0 ELSE 1 END, created, started, finished,
			       CASE state WHEN 'failed' THEN 'step deploy_container failed: health check did not pass'
			                  WHEN 'cancelled' THEN 'cancelled by bench@bench.local' END,
			       (extract(epoch FROM waited) * 1000)::bigint,
			       CASE WHEN pipeline = 'web-service' THEN 'web-service:' || app || ':' || env END,
			       CASE pipeline WHEN 'web-service' THEN '{"app":"' || app || '","env":"' || env || '"}'
			                     WHEN 'health-check' THEN '{"path":"/healthz","port":' || 8000 + i % 50 || ',"status":200}'
			                     WHEN 'canary' THEN '{"regions":["eu-west-1"]}' END,
			       CASE WHEN state = 'completed' THEN 4 ELSE 2 END, 4,
			       CASE WHEN finished IS NULL THEN 1 ELSE 2 END
			FROM rows
			RETURNING id, pipeline, state, created_at, finished_at, last_seq
		), ev AS (
			INSERT INTO task_event_batches (task_id, first_seq, last_seq, created_at, events)
			SELECT id, 1, last_seq, created_at,
			       jsonb_build_array(flightdeck_event('task.state', 'log', 'Task submitted', '{"state":"pending"}'))
			       || CASE WHEN finished_at IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(flightdeck_event('task.' || state,
			           CASE state WHEN 'failed' THEN 'error' ELSE state END, 'Task ' || state, jsonb_build_object('state', state))) END
			FROM ins
		)
		INSERT INTO task_steps (task_id, idx, name, state, attempt, idempotency_key, started_at, finished_at)
		SELECT ins.id, s.idx, s.name,
		       CASE WHEN ins.state = 'completed' OR s.idx < 3 THEN 'completed' WHEN s.idx = 3 AND ins.state = 'failed' THEN 'failed'
		            ELSE 'skipped' END, 1, ins.id || ':' || s.idx, ins.created_at, ins.finished_at
		FROM ins CROSS JOIN (VALUES (1, 'create_dns'), (2, 'issue_cert'), (3, 'deploy_container'), (4, 'configure_monitoring')) AS s(idx, name)
		WHERE ins.pipeline = 'web-service' AND ins.finished_at IS NOT NULL`,
		p.TeamID, p.UserID, p.From, p.To, p.Total, p.End, p.Span, p.UnfinishedTail)
	return interpretError(err)
}

// Analyze refreshes the planner's statistics of every table (bench pages,
// after a fill).
func (s *Store) Analyze(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `ANALYZE`)
	return interpretError(err)
}
