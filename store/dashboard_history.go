package store

import (
	"context"
	"time"
)

// MinuteCount is how many tasks finished in one minute, by outcome.
type MinuteCount struct {
	Minute            time.Time
	Completed, Failed int // Failed counts failed and cancelled tasks
}

// TaskThroughput counts the tasks of teamIDs that finished since since, per
// minute (minutes with none are left out). It reads only the window, through
// tasks_team_id_finished_at_idx.
func (s *Store) TaskThroughput(ctx context.Context, teamIDs []string, since time.Time) ([]MinuteCount, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT date_trunc('minute', finished_at) AS minute,
		       count(*) FILTER (WHERE state = 'completed'),
		       count(*) FILTER (WHERE state <> 'completed')
		FROM tasks
		WHERE team_id = ANY($1) AND finished_at IS NOT NULL AND finished_at >= $2
		GROUP BY minute ORDER BY minute`, teamIDs, since)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []MinuteCount
	for rows.Next() {
		var m MinuteCount
		if err := rows.Scan(&m.Minute, &m.Completed, &m.Failed); err != nil {
			return nil, interpretError(err)
		}
		m.Minute = m.Minute.UTC()
		out = append(out, m)
	}
	return out, interpretError(rows.Err())
}

// PipelineDuration is how long the completed tasks of one pipeline ran.
type PipelineDuration struct {
	Pipeline string
	Count    int
	P50, P95 time.Duration
}

// PipelineDurations gives the median and 95th percentile run time (started
// to finished) of the tasks of teamIDs that completed since since, per
// pipeline (agent tasks under "agent").
func (s *Store) PipelineDurations(ctx context.Context, teamIDs []string, since time.Time) ([]PipelineDuration, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT CASE WHEN kind = 'agent' THEN 'agent' ELSE pipeline END AS name, count(*),
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - started_at)),
		       percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - started_at))
		FROM tasks
		WHERE team_id = ANY($1) AND finished_at IS NOT NULL AND finished_at >= $2
		  AND state = 'completed' AND started_at IS NOT NULL
		GROUP BY name ORDER BY name`, teamIDs, since)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []PipelineDuration
	for rows.Next() {
		var d PipelineDuration
		var p50, p95 float64
		if err := rows.Scan(&d.Pipeline, &d.Count, &p50, &p95); err != nil {
			return nil, interpretError(err)
		}
		d.P50, d.P95 = seconds(p50), seconds(p95)
		out = append(out, d)
	}
	return out, interpretError(rows.Err())
}

// DeployHealth is the DORA view of one pipeline in one environment: how
// many deploys finished, how many failed, and how long it took on average
// from a failure to the next successful deploy of the same app.
type DeployHealth struct {
	Pipeline, Env     string
	Deploys, Failures int
	// Restores is how many failures were followed by a success in the
	// window; MeanTimeToRestore averages over them (0 when none).
	Restores          int
	MeanTimeToRestore time.Duration
}

// ChangeFailureRate is Failures / Deploys (0 with no deploys).
func (d DeployHealth) ChangeFailureRate() float64 {
	if d.Deploys == 0 {
		return 0
	}
	return float64(d.Failures) / float64(d.Deploys)
}

// DeployHealthList computes DeployHealth per pipeline and environment (the
// env parameter; "" when the pipeline has none) over the deploys of teamIDs
// that completed or failed since since. Cancelled deploys are a person's
// choice, not a failed change, and are left out. A run of failures counts
// once for time to restore: from its first failure to the success after it.
func (s *Store) DeployHealthList(ctx context.Context, teamIDs []string, since time.Time) ([]DeployHealth, error) {
	rows, err := s.pool.Query(ctx, `
		WITH d AS (
			SELECT pipeline, coalesce(params->>'env', '') AS env, coalesce(params->>'app', '') AS app,
			       state, finished_at
			FROM tasks
			WHERE team_id = ANY($1) AND finished_at IS NOT NULL AND finished_at >= $2
			  AND kind = 'deploy' AND state IN ('completed', 'failed')
		), w AS (
			SELECT pipeline, env, state, finished_at,
			       lag(state) OVER app_order AS prev_state,
			       min(finished_at) FILTER (WHERE state = 'completed') OVER (app_order
			           ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS restored_at
			FROM d
			WINDOW app_order AS (PARTITION BY pipeline, env, app ORDER BY finished_at)
		)
		SELECT pipeline, env, count(*), count(*) FILTER (WHERE state = 'failed'),
		       count(*) FILTER (WHERE state = 'failed' AND prev_state IS DISTINCT FROM 'failed' AND restored_at IS NOT NULL),
		       coalesce(avg(extract(epoch FROM restored_at - finished_at))
		           FILTER (WHERE state = 'failed' AND prev_state IS DISTINCT FROM 'failed' AND restored_at IS NOT NULL), 0)
		FROM w GROUP BY pipeline, env ORDER BY pipeline, env`, teamIDs, since)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []DeployHealth
	for rows.Next() {
		var h DeployHealth
		var mttr float64
		if err := rows.Scan(&h.Pipeline, &h.Env, &h.Deploys, &h.Failures, &h.Restores, &mttr); err != nil {
			return nil, interpretError(err)
		}
		h.MeanTimeToRestore = seconds(mttr)
		out = append(out, h)
	}
	return out, interpretError(rows.Err())
}

func seconds(f float64) time.Duration {
	return time.Duration(f * float64(time.Second)).Round(time.Millisecond)
}
