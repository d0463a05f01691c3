package store

import (
	"context"
	"fmt"
	"time"
)

// MinuteCount is how many tasks finished in one minute, by outcome.
type MinuteCount struct {
	Minute                       time.Time
	Completed, Failed, Cancelled int
}

// TaskThroughput counts the tasks of teamIDs that finished since since, per
// minute (minutes with none are left out), from task_minutes: the writes
// that end tasks count them there (migration 00022), so an hour is at most
// 180 rows however busy it was.
func (s *Store) TaskThroughput(ctx context.Context, teamIDs []string, since time.Time) ([]MinuteCount, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT minute,
		       coalesce(sum(tasks) FILTER (WHERE outcome = 'completed'), 0),
		       coalesce(sum(tasks) FILTER (WHERE outcome = 'failed'), 0),
		       coalesce(sum(tasks) FILTER (WHERE outcome = 'cancelled'), 0)
		FROM task_minutes
		WHERE team_id = ANY($1) AND minute >= date_trunc('minute', $2::timestamptz)
		GROUP BY minute ORDER BY minute`, teamIDs, since)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []MinuteCount
	for rows.Next() {
		var m MinuteCount
		if err := rows.Scan(&m.Minute, &m.Completed, &m.Failed, &m.Cancelled); err != nil {
			return nil, interpretError(err)
		}
		m.Minute = m.Minute.UTC()
		out = append(out, m)
	}
	return out, interpretError(rows.Err())
}

// TaskMinutePrune deletes up to limit rows of task_minutes older than a
// day (the dashboard shows an hour of them), for the retention pass.
func (s *Store) TaskMinutePrune(ctx context.Context, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM task_minutes WHERE (team_id, minute, outcome, shard) IN (
			SELECT team_id, minute, outcome, shard FROM task_minutes WHERE minute < now() - interval '1 day'
			LIMIT $1 FOR UPDATE SKIP LOCKED)`, limit)
	if err != nil {
		return 0, fmt.Errorf("error pruning task minutes: %w", interpretError(err))
	}
	return int(tag.RowsAffected()), nil
}

// Rollup outcomes: how a task ended, and "restored" for a deploy target
// brought back by a success after failing (Ms is then the time to restore).
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
	OutcomeRestored  = "restored"
)

// Rollup is one row of task_rollups summed over the caller's teams: the
// tasks of a pipeline ("" for agent tasks) that ended one UTC day with one
// outcome and a run time in one bucket (rollup.BucketUpper).
type Rollup struct {
	Day      time.Time
	Pipeline string
	Outcome  string
	Bucket   int
	Tasks    int
	// Ms is their summed run time (finished minus started minus waiting
	// for people), WaitedMs their summed waiting for people.
	Ms, WaitedMs int64
}

// TaskRollupList reads the rollups of teamIDs from the UTC day of since on,
// summed over the teams. Run-time buckets are kept only for tasks that
// completed from bucketsSince's day on (what percentiles are read from);
// every other row has bucket 0, which makes a few hundred rows of a month.
// The writes that end tasks keep task_rollups (a trigger, migration 00022),
// so this reads the same few rows however many tasks ended.
func (s *Store) TaskRollupList(ctx context.Context, teamIDs []string, since, bucketsSince time.Time) ([]Rollup, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT day, pipeline, outcome,
		       CASE WHEN outcome = 'completed' AND day >= ($3::timestamptz AT TIME ZONE 'UTC')::date THEN bucket ELSE 0 END AS b,
		       sum(tasks), sum(ms), sum(waited_ms)
		FROM task_rollups WHERE team_id = ANY($1) AND day >= ($2::timestamptz AT TIME ZONE 'UTC')::date
		GROUP BY day, pipeline, outcome, b`, teamIDs, since, bucketsSince)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []Rollup
	for rows.Next() {
		var r Rollup
		if err := rows.Scan(&r.Day, &r.Pipeline, &r.Outcome, &r.Bucket, &r.Tasks, &r.Ms, &r.WaitedMs); err != nil {
			return nil, interpretError(err)
		}
		r.Day = time.Date(r.Day.Year(), r.Day.Month(), r.Day.Day(), 0, 0, 0, 0, time.UTC)
		out = append(out, r)
	}
	return out, interpretError(rows.Err())
}
