package store_test

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/rollup"
	"flightdeck/workflow/task"
)

func TestDashboardHistory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := dbtest.DB(t)
	st := store.New(db)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	other := testfactory.User(t, st, "b@other.test", "other", auth.RoleDeployer)
	now := time.Now().UTC().Truncate(time.Minute)

	// finished makes a deploy of pipeline to app shop in env that ran from
	// start to end.
	finished := func(owner *auth.User, pl, state, env string, start, end time.Time) string {
		tk := testfactory.Task(t, st, owner, &testfactory.TaskOpts{Pipeline: pl})
		testfactory.Fixture(t, db, `UPDATE tasks SET state = $2, started_at = $3, finished_at = $4,
			params = jsonb_build_object('app', 'shop', 'env', $5::text, 'version', gen_random_uuid()) WHERE id = $1`, tk.ID, state, start, end, env)
		return tk.ID
	}
	at := func(minutes int) time.Time { return now.Add(time.Duration(minutes) * time.Minute) }
	// staging: ok, fail, fail, ok (restored 20 min after the first failure), ok.
	finished(u, "web-service", "completed", "staging", at(-50), at(-50).Add(10*time.Second))
	finished(u, "web-service", "failed", "staging", at(-40), at(-40).Add(20*time.Second))
	finished(u, "web-service", "failed", "staging", at(-30), at(-30).Add(30*time.Second))
	finished(u, "web-service", "completed", "staging", at(-20), at(-20).Add(40*time.Second))
	finished(u, "web-service", "completed", "staging", at(-10), at(-10).Add(50*time.Second))
	// production: one failure never restored; a cancel that is no failed change.
	finished(u, "web-service", "failed", "production", at(-5), at(-5).Add(time.Second))
	finished(u, "web-service", "cancelled", "production", at(-3), at(-3).Add(time.Second))
	// A check is no deploy: its failures are no change failures.
	finished(u, "health-check", "failed", "", at(-4), at(-4).Add(time.Second))
	// Another team's: never counted.
	finished(other, "web-service", "completed", "staging", at(-10), at(-10).Add(time.Second))
	testfactory.Task(t, st, u, nil) // still pending: not finished
	// The fixtures made a history without the writes that keep rollups:
	// work them out as those writes would have, in finish order.
	require.NoError(t, st.RollupRebuild(ctx, u.Memberships[0].TeamID))
	require.NoError(t, st.RollupRebuild(ctx, other.Memberships[0].TeamID))

	t.Run("ThroughputPerMinuteKeepsCancelledApart", func(t *testing.T) {
		got, err := st.TaskThroughput(ctx, u.TeamIDs(), now.Add(-time.Hour))
		require.NoError(t, err)
		require.Len(t, got, 8)
		require.Equal(t, store.MinuteCount{Minute: at(-50), Completed: 1}, got[0])
		require.Equal(t, store.MinuteCount{Minute: at(-40), Failed: 1}, got[1])
		require.Equal(t, store.MinuteCount{Minute: at(-3), Cancelled: 1}, got[7], "cancelled is not failed")
	})

	rollups, err := st.TaskRollupList(ctx, u.TeamIDs(), now.Add(-24*time.Hour), now.Add(-24*time.Hour))
	require.NoError(t, err)

	t.Run("RunTimesOfCompletedTasks", func(t *testing.T) {
		got := rollup.RunTimesOf(rollups, at(-60)) // from the day of the first run: near midnight UTC, that is yesterday
		require.Len(t, got, 1)
		require.Equal(t, "web-service", got[0].Pipeline)
		require.Equal(t, 3, got[0].Runs)
		require.Equal(t, 33333*time.Millisecond, got[0].Mean)
		near(t, 40*time.Second, got[0].P50)
		near(t, 50*time.Second, got[0].P95)
	})

	t.Run("DORAOnlyForDeployPipelinesAndCancelledApart", func(t *testing.T) {
		catalog, err := pipeline.NewCatalog(pipeline.Builtin()...)
		require.NoError(t, err)
		got := rollup.DeployHealthOf(rollups, now.Add(-24*time.Hour), func(name string) bool {
			p, ok := catalog.Get(name)
			return ok && p.Deploys()
		})
		require.Len(t, got, 1, "health-check has no target: no DORA figures")
		ws := got[0]
		require.Equal(t, "web-service", ws.Pipeline)
		require.Equal(t, 6, ws.Deploys, "completed and failed deploys")
		require.Equal(t, 3, ws.Failures, "the cancel is no failure")
		require.Equal(t, 1, ws.Cancelled)
		require.InDelta(t, 0.5, ws.ChangeFailureRate(), 1e-9)
		require.Equal(t, 1, ws.Restores, "a run of failures is one outage; production is not restored")
		// From the first failure's end (at -40 min +20 s) to the restore (at -20 min +40 s).
		require.Equal(t, 20*time.Minute+20*time.Second, ws.MeanTimeToRestore)
	})
}

// near checks a percentile read off the rollup's buckets: within 19%.
func near(t *testing.T, want, got time.Duration) {
	t.Helper()
	require.InEpsilon(t, want.Seconds(), got.Seconds(), 0.19, "want about %s, got %s", want, got)
}

func TestRunTimeLeavesOutWaitingForPeople(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := dbtest.DB(t)
	st := store.New(db)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	boss := testfactory.User(t, st, "boss@acme.test", "acme", auth.RoleApprover)
	tk := testfactory.Task(t, st, u, &testfactory.TaskOpts{Pipeline: "web-service"})
	a := testfactory.AwaitingApproval(t, st, tk.ID, []string{"approver"})
	// it started 15 minutes ago; the approval was asked for 10 minutes ago
	testfactory.Fixture(t, db, `UPDATE tasks SET started_at = now() - interval '15 minutes',
		waiting_since = waiting_since - interval '10 minutes' WHERE id = $1`, tk.ID)
	_, err := st.ApprovalDecide(ctx, store.ApprovalDecideParams{TeamIDs: boss.TeamIDs(), TaskID: tk.ID, ApprovalID: a.ID,
		Approve: true, ActorID: boss.ID, Actor: boss.Email, ActorRole: "approver"})
	require.NoError(t, err)
	testfactory.Completed(t, st, tk.ID)
	foldAll(t, st)

	rollups, err := st.TaskRollupList(ctx, u.TeamIDs(), time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
	require.NoError(t, err)
	got := rollup.RunTimesOf(rollups, time.Now().Add(-time.Hour))
	require.Len(t, got, 1)
	// The database's clock moves between the statements above (seconds,
	// under -race on a loaded machine); the figures to tell apart are
	// minutes apart.
	require.InDelta(t, (5 * time.Minute).Seconds(), got[0].Mean.Seconds(), 30, "15 minutes since the start, 10 of them waiting")
	require.InDelta(t, (10 * time.Minute).Seconds(), got[0].MeanWaited.Seconds(), 30)
}

// TestRollupsMatchTheTasks makes a history of a random mix of tasks
// (outcomes, targets, days, waits) and checks that the rollups the Go rules
// work out of it (RollupRebuild) equal what the finished tasks say, worked
// out from scratch by a second implementation.
func TestRollupsMatchTheTasks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := dbtest.DB(t)
	st := store.New(db)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	outcomes := []string{"completed", "completed", "completed", "failed", "failed", "cancelled"}
	var pending []string
	for i := range 240 {
		pl := []string{"web-service", "web-service", "canary", "health-check"}[rng.IntN(4)]
		tk := testfactory.Task(t, st, u, &testfactory.TaskOpts{Pipeline: pl})
		started := start.Add(time.Duration(i) * 15 * time.Minute)
		_, err := db.Exec(ctx, `UPDATE tasks SET state = 'running', started_at = $2, waited_ms = $3,
			params = jsonb_build_object('app', $4::text, 'env', 'staging', 'version', $5::text) WHERE id = $1`,
			tk.ID, started, rng.IntN(3)*60000, []string{"shop", "blog", "api"}[rng.IntN(3)], strconv.Itoa(i))
		require.NoError(t, err)
		pending = append(pending, tk.ID)
		// End the waiting tasks now and then, several in one statement.
		if rng.IntN(3) == 0 || i == 239 {
			ends := make([]string, len(pending))
			finish := make([]time.Time, len(pending))
			for j := range pending {
				ends[j] = outcomes[rng.IntN(len(outcomes))]
				finish[j] = start.Add(time.Duration(i)*15*time.Minute + time.Duration(j*5+1+rng.IntN(4))*time.Second)
			}
			_, err := db.Exec(ctx, `UPDATE tasks t SET state = x.state, finished_at = x.at
				FROM unnest($1::uuid[], $2::text[], $3::timestamptz[]) AS x(id, state, at) WHERE t.id = x.id`, pending, ends, finish)
			require.NoError(t, err)
			pending = nil
		}
	}

	// One statement ending a target's failures and successes in turn: each
	// run of failures is restored by the success after it.
	var ids []string
	states := []string{"failed", "completed", "failed", "failed", "completed", "failed"}
	for range states {
		tk := testfactory.Task(t, st, u, &testfactory.TaskOpts{Pipeline: "web-service"})
		ids = append(ids, tk.ID)
	}
	testfactory.Fixture(t, db, `UPDATE tasks t SET state = x.state, started_at = $3::timestamptz, finished_at = $3::timestamptz + make_interval(mins => x.n::int),
			params = '{"app": "zeta", "env": "staging"}'
		FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS x(id, state, n) WHERE t.id = x.id`,
		ids, states, start.Add(241*15*time.Minute))

	require.NoError(t, st.RollupRebuild(ctx, u.Memberships[0].TeamID))

	got, err := st.TaskRollupList(ctx, u.TeamIDs(), start.Add(-24*time.Hour), start.Add(-24*time.Hour))
	require.NoError(t, err)
	slices.SortFunc(got, compareRollups)
	require.Equal(t, rollupsFromScratch(t, db, u.TeamIDs()[0]), got)
	outs := map[string]bool{}
	for _, r := range got {
		outs[r.Outcome] = true
	}
	require.Len(t, outs, 4, "the mix has every outcome, restores included")
}

// rollupsFromScratch works the rollups out of the finished tasks alone: a
// second implementation of store.RollupFold and RestoreFold, to check them against.
func rollupsFromScratch(t *testing.T, db *pgxpool.Pool, teamID string) []store.Rollup {
	t.Helper()
	rows, err := db.Query(t.Context(), `
		SELECT pipeline, state, started_at, finished_at, waited_ms, pipeline || ' ' || COALESCE(target_key, concurrency_key, (params - 'version')::text)
		FROM tasks WHERE team_id = $1 AND state IN ('completed', 'failed', 'cancelled') ORDER BY finished_at`, teamID)
	require.NoError(t, err)
	defer rows.Close()
	type key struct {
		day           time.Time
		pipeline, out string
		bucket        int
	}
	sums := map[key]*store.Rollup{}
	add := func(day time.Time, pl, out string, ms, waited int64) {
		day = time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, time.UTC)
		b := 0 // every outcome but completed is read without buckets
		if ms > 1 && out == "completed" {
			b = min(99, int(math.Ceil(4*math.Log(float64(ms))/math.Ln2)))
		}
		k := key{day, pl, out, b}
		if sums[k] == nil {
			sums[k] = &store.Rollup{Day: day, Pipeline: pl, Outcome: out, Bucket: b}
		}
		sums[k].Tasks++
		sums[k].Ms += ms
		sums[k].WaitedMs += waited
	}
	failingSince := map[string]time.Time{}
	for rows.Next() {
		var pl, state, target string
		var started, finished time.Time
		var waited int64
		require.NoError(t, rows.Scan(&pl, &state, &started, &finished, &waited, &target))
		finished = finished.UTC()
		add(finished, pl, state, max(0, finished.Sub(started).Milliseconds()-waited), waited)
		switch since, failing := failingSince[target]; {
		case state == "failed" && !failing:
			failingSince[target] = finished
		case state == "completed" && failing:
			add(finished, pl, "restored", finished.Sub(since).Milliseconds(), 0)
			delete(failingSince, target)
		}
	}
	require.NoError(t, rows.Err())
	var out []store.Rollup
	for _, r := range sums {
		out = append(out, *r)
	}
	slices.SortFunc(out, compareRollups)
	return out
}

func compareRollups(a, b store.Rollup) int {
	return cmp.Or(a.Day.Compare(b.Day), cmp.Compare(a.Pipeline, b.Pipeline), cmp.Compare(a.Outcome, b.Outcome), cmp.Compare(a.Bucket, b.Bucket))
}

// TestEndingWritesKeepRollups ends tasks through the writes that end them
// (workers' batches, a cancel) and checks that what the fold kept from
// their events equals what a rebuild from the finished tasks makes: the
// incremental rules and the whole-history ones agree.
func TestEndingWritesKeepRollups(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := dbtest.DB(t)
	st := store.New(db)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	rng := rand.New(rand.NewPCG(3, 4))
	outcomes := []task.State{task.StateCompleted, task.StateCompleted, task.StateFailed, task.StateCancelled}
	for round := range 6 {
		var ids []string
		for range 12 {
			pl := []string{"web-service", "canary", "health-check"}[rng.IntN(3)]
			tk := testfactory.Task(t, st, u, &testfactory.TaskOpts{Pipeline: pl})
			ids = append(ids, tk.ID)
		}
		if round%2 == 1 {
			// one cancelled before it ran, by a person
			_, err := st.TaskCancel(ctx, u.TeamIDs(), ids[0], u.Email)
			require.NoError(t, err)
			ids = ids[1:]
		}
		claimed, err := st.TaskClaim(ctx, "w", 100, time.Minute)
		require.NoError(t, err)
		var ws []store.TaskWrite
		for _, c := range claimed {
			s := outcomes[rng.IntN(len(outcomes))]
			ws = append(ws, store.TaskWrite{ID: c.Task.ID, Token: c.Task.LeaseToken, State: s, Release: true,
				Events: []task.Event{{Type: task.EventTaskState, Status: task.StatusLog, Message: string(s)}}})
		}
		written, err := st.TaskWrites(ctx, ws)
		require.NoError(t, err)
		require.Len(t, written, len(ids))
	}
	foldAll(t, st)
	since := time.Now().Add(-48 * time.Hour)
	kept, err := st.TaskRollupList(ctx, u.TeamIDs(), since, since)
	require.NoError(t, err)
	require.NotEmpty(t, kept)
	keptEnvs, err := st.EnvironmentList(ctx, store.EnvironmentListParams{TeamIDs: u.TeamIDs()})
	require.NoError(t, err)
	keptMinutes, err := st.TaskThroughput(ctx, u.TeamIDs(), since)
	require.NoError(t, err)

	require.NoError(t, st.RollupRebuild(ctx, u.Memberships[0].TeamID))
	rebuilt, err := st.TaskRollupList(ctx, u.TeamIDs(), since, since)
	require.NoError(t, err)
	slices.SortFunc(kept, compareRollups)
	slices.SortFunc(rebuilt, compareRollups)
	require.Equal(t, rebuilt, kept)
	rebuiltEnvs, err := st.EnvironmentList(ctx, store.EnvironmentListParams{TeamIDs: u.TeamIDs()})
	require.NoError(t, err)
	require.Equal(t, rebuiltEnvs, keptEnvs)
	rebuiltMinutes, err := st.TaskThroughput(ctx, u.TeamIDs(), since)
	require.NoError(t, err)
	require.Equal(t, rebuiltMinutes, keptMinutes)
}
