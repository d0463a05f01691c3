package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// What the rollup fold (rollup_fold.go) keeps beside the tasks, out of the
// write path: the dashboard's rollups (task_rollups, task_minutes) and time
// to restore (deploy_failures). The rules are the pure functions below
// (unit tested); taskEnded reads the rows they start from and writes what
// they make. What is deployed where is no such state: it is read from the
// tasks (EnvironmentList).

// Ended is a task that ended, as the rollups see it.
type Ended struct {
	ID, TeamID string
	Kind       task.Kind
	Pipeline   string
	State      task.State
	CreatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt time.Time
	WaitedMS   int64
	// RestoreTarget names the deploy's target for time to restore: the
	// pipeline and its target key (or, for deploys made before target keys,
	// its concurrency key, else its params but the version).
	RestoreTarget string
}

// RollupAdd is what ended tasks add to one row of task_rollups.
type RollupAdd struct {
	TeamID     string
	Day        time.Time // UTC
	Pipeline   string    // "" for agent tasks
	Outcome    string    // completed, failed, cancelled, restored
	Bucket     int
	Tasks      int
	MS         int64
	WaitedMS   int64
	CreatedMin time.Time // the earliest creation among them
}

// MinuteAdd is what ended tasks add to one row of task_minutes.
type MinuteAdd struct {
	TeamID  string
	Minute  time.Time
	Outcome string
	Tasks   int
}

// Failing is a deploy target whose last deploy failed, since its first
// failure after its last success (a deploy_failures row).
type Failing struct {
	TeamID string    `db:"team_id"`
	Target string    `db:"target"`
	Since  time.Time `db:"since"`
}

// msBucket is the rollup bucket of a run time: quarter powers of two of
// milliseconds, so percentiles read from buckets are within 19%.
func msBucket(ms int64) int {
	if ms <= 1 {
		return 0
	}
	return min(99, int(math.Ceil(4*math.Log(float64(ms))/math.Ln2)))
}

// runMS is an ended task's run time (task.RunTime) in milliseconds.
func (e Ended) runMS() int64 {
	return task.RunTime(e.StartedAt, e.FinishedAt, time.Duration(e.WaitedMS)*time.Millisecond).Milliseconds()
}

// RollupFold adds ended tasks up by team, day, pipeline, outcome and run-time
// bucket, and those that ended from minutesSince on by team, minute and
// outcome (the last day's throughput); rows come in key order, so
// concurrent writers lock them in one order.
func RollupFold(ended []Ended, minutesSince time.Time) ([]RollupAdd, []MinuteAdd) {
	type rk struct {
		team     string
		day      time.Time
		pipeline string
		outcome  string
		bucket   int
	}
	type mk struct {
		team    string
		minute  time.Time
		outcome string
	}
	rs := map[rk]*RollupAdd{}
	ms := map[mk]*MinuteAdd{}
	for _, e := range ended {
		pl := e.Pipeline
		if e.Kind == task.KindAgent {
			pl = ""
		}
		run := e.runMS()
		k := rk{e.TeamID, task.UTCDay(e.FinishedAt), pl, string(e.State), msBucket(run)}
		r := rs[k]
		if r == nil {
			r = &RollupAdd{TeamID: k.team, Day: k.day, Pipeline: pl, Outcome: k.outcome, Bucket: k.bucket, CreatedMin: e.CreatedAt}
			rs[k] = r
		}
		r.Tasks++
		r.MS += run
		r.WaitedMS += e.WaitedMS
		if e.CreatedAt.Before(r.CreatedMin) {
			r.CreatedMin = e.CreatedAt
		}
		if e.FinishedAt.Before(minutesSince) {
			continue
		}
		m := mk{e.TeamID, e.FinishedAt.UTC().Truncate(time.Minute), string(e.State)}
		if ms[m] == nil {
			ms[m] = &MinuteAdd{TeamID: m.team, Minute: m.minute, Outcome: m.outcome}
		}
		ms[m].Tasks++
	}
	rollups := make([]RollupAdd, 0, len(rs))
	for _, r := range rs {
		rollups = append(rollups, *r)
	}
	sortRollups(rollups)
	minutes := make([]MinuteAdd, 0, len(ms))
	for _, m := range ms {
		minutes = append(minutes, *m)
	}
	slices.SortFunc(minutes, func(a, b MinuteAdd) int {
		return cmp.Or(cmp.Compare(a.TeamID, b.TeamID), a.Minute.Compare(b.Minute), cmp.Compare(a.Outcome, b.Outcome))
	})
	return rollups, minutes
}

func sortRollups(rs []RollupAdd) {
	slices.SortFunc(rs, func(a, b RollupAdd) int {
		return cmp.Or(cmp.Compare(a.TeamID, b.TeamID), a.Day.Compare(b.Day), cmp.Compare(a.Pipeline, b.Pipeline),
			cmp.Compare(a.Outcome, b.Outcome), cmp.Compare(a.Bucket, b.Bucket))
	})
}

// restoreDeploys are the ended tasks time to restore follows: deploys that
// completed or failed.
func restoreDeploys(ended []Ended) []Ended {
	var out []Ended
	for _, e := range ended {
		if e.Kind == task.KindDeploy && (e.State == task.StateCompleted || e.State == task.StateFailed) {
			out = append(out, e)
		}
	}
	return out
}

// RestoreFold moves time to restore on: a target's deploys are taken in
// finish order, starting from its failing row (if any); each success after
// failures is a restore, measured from the first failure of the run. It
// returns the restores (rollup rows of outcome restored), the targets
// failing afterwards, and those no longer failing.
func RestoreFold(ended []Ended, failing []Failing) (restored []RollupAdd, still []Failing, cleared []Failing) {
	type key struct{ team, target string }
	since := map[key]*time.Time{}
	for _, f := range failing {
		s := f.Since
		since[key{f.TeamID, f.Target}] = &s
	}
	deploys := restoreDeploys(ended)
	slices.SortStableFunc(deploys, func(a, b Ended) int {
		return cmp.Or(a.FinishedAt.Compare(b.FinishedAt), cmp.Compare(a.ID, b.ID))
	})
	type acc struct {
		team, pipeline string
		day            time.Time
		bucket         int
	}
	adds := map[acc]*RollupAdd{}
	var touched []key
	for _, d := range deploys {
		k := key{d.TeamID, d.RestoreTarget}
		if !slices.Contains(touched, k) {
			touched = append(touched, k)
		}
		s := since[k]
		switch {
		case d.State == task.StateFailed && s == nil:
			f := d.FinishedAt
			since[k] = &f
		case d.State == task.StateCompleted && s != nil:
			ms := d.FinishedAt.Sub(*s).Milliseconds()
			a := acc{d.TeamID, d.Pipeline, task.UTCDay(d.FinishedAt), msBucket(ms)}
			r := adds[a]
			if r == nil {
				r = &RollupAdd{TeamID: d.TeamID, Day: a.day, Pipeline: d.Pipeline, Outcome: "restored", Bucket: a.bucket, CreatedMin: d.CreatedAt}
				adds[a] = r
			}
			r.Tasks++
			r.MS += ms
			if d.CreatedAt.Before(r.CreatedMin) {
				r.CreatedMin = d.CreatedAt
			}
			since[k] = nil
		}
	}
	for _, r := range adds {
		restored = append(restored, *r)
	}
	sortRollups(restored)
	was := map[key]bool{}
	for _, f := range failing {
		was[key{f.TeamID, f.Target}] = true
	}
	for _, k := range touched {
		if s := since[k]; s != nil {
			still = append(still, Failing{TeamID: k.team, Target: k.target, Since: *s})
		} else if was[k] {
			cleared = append(cleared, Failing{TeamID: k.team, Target: k.target})
		}
	}
	return restored, still, cleared
}

// taskEndedSince keeps the rollups and time to restore of ended tasks in
// tx, counting in task_minutes only the tasks that ended from minutesSince
// on: it reads the rows the rules start from, applies them, and writes what
// changed.
func taskEndedSince(ctx context.Context, tx pgx.Tx, ended []Ended, minutesSince time.Time) error {
	if len(ended) == 0 {
		return nil
	}
	rollups, minutes := RollupFold(ended, minutesSince)
	var failing []Failing
	if deploys := restoreDeploys(ended); len(deploys) > 0 {
		teams, targets := make([]string, len(deploys)), make([]string, len(deploys))
		for i, d := range deploys {
			teams[i], targets[i] = d.TeamID, d.RestoreTarget
		}
		rows, err := tx.Query(ctx, `
			SELECT team_id::text AS team_id, target, since FROM deploy_failures
			WHERE (team_id, target) IN (SELECT * FROM unnest($1::uuid[], $2::text[]))
			ORDER BY team_id, target FOR UPDATE`, teams, targets)
		if err != nil {
			return interpretError(err)
		}
		if failing, err = pgx.CollectRows(rows, pgx.RowToStructByName[Failing]); err != nil {
			return interpretError(err)
		}
	}
	restored, still, cleared := RestoreFold(ended, failing)
	rollups = append(rollups, restored...)
	sortRollups(rollups)

	var r rollupArrays
	for _, x := range rollups {
		r.add(x)
	}
	var m struct {
		teams, outcomes []string
		minutes         []time.Time
		tasks           []int32
	}
	for _, x := range minutes {
		m.teams, m.minutes, m.outcomes, m.tasks = append(m.teams, x.TeamID), append(m.minutes, x.Minute), append(m.outcomes, x.Outcome), append(m.tasks, int32(x.Tasks))
	}
	var f struct {
		teams, targets []string
		since          []time.Time
	}
	for _, x := range still {
		f.teams, f.targets, f.since = append(f.teams, x.TeamID), append(f.targets, x.Target), append(f.since, x.Since)
	}
	var c struct{ teams, targets []string }
	for _, x := range cleared {
		c.teams, c.targets = append(c.teams, x.TeamID), append(c.targets, x.Target)
	}
	// Rows per writer: a row's shard is the session's backend pid modulo
	// 8, so a rebuild beside the fold upserts different rows and readers
	// sum them.
	_, err := tx.Exec(ctx, `
		WITH rollups AS (
			INSERT INTO task_rollups AS r (team_id, day, pipeline, outcome, bucket, shard, tasks, ms, waited_ms, created_min)
			SELECT team_id, day, pipeline, outcome, bucket, pg_backend_pid() % 8, tasks, ms, waited_ms, created_min
			FROM unnest($1::uuid[], $2::date[], $3::text[], $4::text[], $5::smallint[], $6::int[], $7::bigint[], $8::bigint[], $9::timestamptz[])
				AS x(team_id, day, pipeline, outcome, bucket, tasks, ms, waited_ms, created_min)
			ON CONFLICT (team_id, day, pipeline, outcome, bucket, shard) DO UPDATE
				SET tasks = r.tasks + excluded.tasks, ms = r.ms + excluded.ms, waited_ms = r.waited_ms + excluded.waited_ms,
					created_min = least(r.created_min, excluded.created_min)
		), minutes AS (
			INSERT INTO task_minutes AS m (team_id, minute, outcome, shard, tasks)
			SELECT team_id, minute, outcome, pg_backend_pid() % 8, tasks
			FROM unnest($10::uuid[], $11::timestamptz[], $12::text[], $13::int[]) AS x(team_id, minute, outcome, tasks)
			ON CONFLICT (team_id, minute, outcome, shard) DO UPDATE SET tasks = m.tasks + excluded.tasks
		), failing AS (
			INSERT INTO deploy_failures AS f (team_id, target, since)
			SELECT * FROM unnest($14::uuid[], $15::text[], $16::timestamptz[])
			ON CONFLICT (team_id, target) DO UPDATE SET since = excluded.since
		)
		DELETE FROM deploy_failures f USING unnest($17::uuid[], $18::text[]) AS x(team_id, target)
		WHERE f.team_id = x.team_id AND f.target = x.target`,
		r.teams, r.days, r.pipelines, r.outcomes, r.buckets, r.tasks, r.ms, r.waited, r.createdMin,
		m.teams, m.minutes, m.outcomes, m.tasks, f.teams, f.targets, f.since, c.teams, c.targets)
	if err != nil {
		return fmt.Errorf("error keeping rollups: %w", interpretError(err))
	}
	return nil
}

type rollupArrays struct {
	teams, pipelines, outcomes []string
	days, createdMin           []time.Time
	buckets                    []int16
	tasks                      []int32
	ms, waited                 []int64
}

func (a *rollupArrays) add(r RollupAdd) {
	a.teams, a.days, a.pipelines, a.outcomes = append(a.teams, r.TeamID), append(a.days, r.Day), append(a.pipelines, r.Pipeline), append(a.outcomes, r.Outcome)
	a.buckets, a.tasks, a.ms, a.waited = append(a.buckets, int16(r.Bucket)), append(a.tasks, int32(r.Tasks)), append(a.ms, r.MS), append(a.waited, r.WaitedMS)
	a.createdMin = append(a.createdMin, r.CreatedMin)
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// RollupRebuild works a team's rollups and time to restore out of its
// finished tasks again, from scratch, in finish order: the same rules the
// fold follows, for a history made without it (a bulk load, bench pages'
// fill) or to repair figures. It locks the fold's cursor first, so no fold
// adds a task it already counted.
func (s *Store) RollupRebuild(ctx context.Context, teamID string) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM outbox_cursors WHERE name = $1 FOR UPDATE`, rollupCursor); err != nil {
			return interpretError(err)
		}
		_, err := tx.Exec(ctx, `
			WITH r AS (DELETE FROM task_rollups WHERE team_id = $1),
				m AS (DELETE FROM task_minutes WHERE team_id = $1)
			DELETE FROM deploy_failures WHERE team_id = $1`, teamID)
		if err != nil {
			return interpretError(err)
		}
		// every target the team deployed to is listed, finished or not
		_, err = tx.Exec(ctx, `
			INSERT INTO environments (team_id, pipeline, target_key)
			SELECT DISTINCT team_id, pipeline, target_key FROM tasks WHERE team_id = $1 AND target_key IS NOT NULL
			ON CONFLICT DO NOTHING`, teamID)
		if err != nil {
			return interpretError(err)
		}
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return interpretError(err)
		}
		rows, err := tx.Query(ctx, `
			SELECT id::text AS id, team_id::text AS team_id, kind, pipeline, state, created_at, started_at, finished_at, waited_ms,
				`+endedTargetSQL+`
			FROM tasks t WHERE team_id = $1 AND state IN `+terminalStates+` AND finished_at IS NOT NULL
				-- a task whose end the fold has not reached yet is the fold's
				-- to count, not the rebuild's
				AND NOT EXISTS (SELECT 1 FROM outbox_cursors c, task_event_batches b
					WHERE c.name = $2 AND b.task_id = t.id AND b.ends AND b.created_at = t.finished_at
						AND (b.txid, b.task_id, b.last_seq) > (c.txid, c.task_id, c.seq))
			ORDER BY finished_at, id`, teamID, rollupCursor)
		if err != nil {
			return interpretError(err)
		}
		all, err := pgx.CollectRows(rows, pgx.RowToStructByName[endedRow])
		if err != nil {
			return interpretError(err)
		}
		for chunk := range slices.Chunk(all, 1000) {
			ended := make([]Ended, len(chunk))
			for i, r := range chunk {
				ended[i] = r.ended()
			}
			if err := taskEndedSince(ctx, tx, ended, now.Add(-24*time.Hour)); err != nil {
				return err
			}
		}
		return nil
	})
}

type endedRow struct {
	ID             string         `db:"id"`
	TeamID         string         `db:"team_id"`
	Kind           string         `db:"kind"`
	Pipeline       string         `db:"pipeline"`
	State          string         `db:"state"`
	CreatedAt      time.Time      `db:"created_at"`
	StartedAt      *time.Time     `db:"started_at"`
	FinishedAt     time.Time      `db:"finished_at"`
	WaitedMS       int64          `db:"waited_ms"`
	TargetKey      string         `db:"target_key"`
	ConcurrencyKey string         `db:"concurrency_key"`
	Params         map[string]any `db:"params"` // deploys without a target key only
}

func (r endedRow) ended() Ended {
	e := Ended{ID: r.ID, TeamID: r.TeamID, Kind: task.Kind(r.Kind), Pipeline: r.Pipeline, State: task.State(r.State),
		CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, WaitedMS: r.WaitedMS}
	if e.Kind == task.KindDeploy {
		e.RestoreTarget = pipeline.RestoreTarget(r.Pipeline, r.TargetKey, r.ConcurrencyKey, r.Params)
	}
	return e
}

// endedTargetSQL selects what endedRow needs of a tasks row t for its
// restore target (pipeline.RestoreTarget): the params only when no key
// names the target, which only deploys made before target keys lack.
const endedTargetSQL = `COALESCE(t.target_key, '') AS target_key, COALESCE(t.concurrency_key, '') AS concurrency_key,
	CASE WHEN t.kind = 'deploy' AND t.target_key IS NULL AND t.concurrency_key IS NULL THEN t.params END AS params`
