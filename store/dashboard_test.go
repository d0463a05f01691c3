package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
)

func TestDashboardHistory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := dbtest.DB(t)
	st := store.New(db)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	other := testfactory.User(t, st, "b@other.test", "other", auth.RoleDeployer)
	now := time.Now().UTC().Truncate(time.Minute)

	// finished makes a deploy of app shop that ran from start to end.
	finished := func(owner *auth.User, state, env string, start, end time.Time) {
		tk := testfactory.Task(t, st, owner, &testfactory.TaskOpts{Pipeline: "web-service"})
		_, err := db.Exec(ctx, `UPDATE tasks SET state = $2, started_at = $3, finished_at = $4,
			params = jsonb_build_object('app', 'shop', 'env', $5::text) WHERE id = $1`, tk.ID, state, start, end, env)
		require.NoError(t, err)
	}
	at := func(minutes int) time.Time { return now.Add(time.Duration(minutes) * time.Minute) }
	// staging: ok, fail, fail, ok (restored 20 min after the first failure), ok.
	finished(u, "completed", "staging", at(-50), at(-50).Add(10*time.Second))
	finished(u, "failed", "staging", at(-40), at(-40).Add(20*time.Second))
	finished(u, "failed", "staging", at(-30), at(-30).Add(30*time.Second))
	finished(u, "completed", "staging", at(-20), at(-20).Add(40*time.Second))
	finished(u, "completed", "staging", at(-10), at(-10).Add(50*time.Second))
	// production: one failure never restored; a cancel that is no failed change.
	finished(u, "failed", "production", at(-5), at(-5).Add(time.Second))
	finished(u, "cancelled", "production", at(-3), at(-3).Add(time.Second))
	// Older than the window, and another team's: never counted.
	finished(u, "failed", "staging", at(-200), at(-200).Add(time.Second))
	finished(other, "completed", "staging", at(-10), at(-10).Add(time.Second))
	testfactory.Task(t, st, u, nil) // still pending: not finished

	since := now.Add(-time.Hour)

	t.Run("ThroughputPerMinute", func(t *testing.T) {
		got, err := st.TaskThroughput(ctx, u.TeamIDs(), since)
		require.NoError(t, err)
		require.Len(t, got, 7)
		require.Equal(t, store.MinuteCount{Minute: at(-50), Completed: 1}, got[0])
		require.Equal(t, store.MinuteCount{Minute: at(-40), Failed: 1}, got[1])
		require.Equal(t, store.MinuteCount{Minute: at(-3), Failed: 1}, got[6], "cancelled counts as not completed")
	})

	t.Run("DurationPercentilesOfCompletedTasks", func(t *testing.T) {
		got, err := st.PipelineDurations(ctx, u.TeamIDs(), since)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, "web-service", got[0].Pipeline)
		require.Equal(t, 3, got[0].Count)
		require.Equal(t, 40*time.Second, got[0].P50)
		require.Equal(t, 49*time.Second, got[0].P95) // interpolated between 40 s and 50 s
	})

	t.Run("ChangeFailureRateAndTimeToRestore", func(t *testing.T) {
		got, err := st.DeployHealthList(ctx, u.TeamIDs(), since)
		require.NoError(t, err)
		require.Len(t, got, 2)
		prod, staging := got[0], got[1]
		require.Equal(t, "production", prod.Env)
		require.Equal(t, 1, prod.Deploys)
		require.Equal(t, 1, prod.Failures)
		require.Equal(t, 0, prod.Restores)
		require.Equal(t, time.Duration(0), prod.MeanTimeToRestore)
		require.Equal(t, "staging", staging.Env)
		require.Equal(t, 5, staging.Deploys)
		require.Equal(t, 2, staging.Failures)
		require.InDelta(t, 0.4, staging.ChangeFailureRate(), 1e-9)
		require.Equal(t, 1, staging.Restores, "a run of failures is one outage")
		// From the first failure's end (at -40 min +20 s) to the restore (at -20 min +40 s).
		require.Equal(t, 20*time.Minute+20*time.Second, staging.MeanTimeToRestore)
	})
}
