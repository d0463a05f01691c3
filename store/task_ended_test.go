package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/task"
)

var t0 = time.Date(2026, 11, 20, 23, 59, 0, 0, time.UTC)

func at(d time.Duration) *time.Time { x := t0.Add(d); return &x }

func TestRollupFoldRunTimeLeavesOutWaiting(t *testing.T) {
	ended := []Ended{
		{ID: "a", TeamID: "T", Kind: task.KindDeploy, Pipeline: "web", State: task.StateCompleted, CreatedAt: t0,
			StartedAt: at(0), FinishedAt: t0.Add(10 * time.Minute), WaitedMS: 4 * 60_000},
		{ID: "b", TeamID: "T", Kind: task.KindDeploy, Pipeline: "web", State: task.StateCompleted, CreatedAt: t0.Add(-time.Hour),
			StartedAt: at(0), FinishedAt: t0.Add(10 * time.Minute), WaitedMS: 4 * 60_000},
		{ID: "c", TeamID: "T", Kind: task.KindAgent, Pipeline: "", State: task.StateFailed, CreatedAt: t0, FinishedAt: t0.Add(30 * time.Second)},
	}
	rs, ms := RollupFold(ended, time.Time{})
	require.Len(t, rs, 2)
	// the agent's failure ended on the 20th, the deploys on the 21st (UTC)
	require.Equal(t, RollupAdd{TeamID: "T", Day: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), Pipeline: "", Outcome: "failed",
		Bucket: 0, Tasks: 1, CreatedMin: t0}, rs[0], "never started: no run time")
	web := rs[1]
	require.Equal(t, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), web.Day)
	require.Equal(t, 2, web.Tasks)
	require.Equal(t, int64(2*6*60_000), web.MS, "ten minutes each, four of them waiting")
	require.Equal(t, int64(2*4*60_000), web.WaitedMS)
	require.Equal(t, msBucket(6*60_000), web.Bucket)
	require.Equal(t, t0.Add(-time.Hour), web.CreatedMin, "the earliest creation")
	require.Equal(t, []MinuteAdd{{TeamID: "T", Minute: t0.Add(30 * time.Second).Truncate(time.Minute), Outcome: "failed", Tasks: 1},
		{TeamID: "T", Minute: t0.Add(10 * time.Minute), Outcome: "completed", Tasks: 2}}, ms)

	_, ms = RollupFold(ended, t0.Add(5*time.Minute))
	require.Len(t, ms, 1, "only the minutes from the cut-off on")
}

func TestMsBucket(t *testing.T) {
	require.Equal(t, 0, msBucket(0))
	require.Equal(t, 0, msBucket(1))
	require.Equal(t, 4, msBucket(2))
	require.Equal(t, 40, msBucket(1024))
	require.Equal(t, 41, msBucket(1025))
	require.Equal(t, 99, msBucket(1<<40), "capped")
}

func TestRestoreFold(t *testing.T) {
	dep := func(id, target string, s task.State, min int) Ended {
		return Ended{ID: id, TeamID: "T", Kind: task.KindDeploy, Pipeline: "web", State: s, RestoreTarget: target,
			CreatedAt: t0, FinishedAt: t0.Add(time.Duration(min) * time.Minute)}
	}
	t.Run("ARunOfFailuresIsRestoredByTheNextSuccess", func(t *testing.T) {
		restored, still, cleared := RestoreFold([]Ended{
			dep("1", "a", task.StateFailed, 1), dep("2", "a", task.StateFailed, 2), dep("3", "a", task.StateCompleted, 5),
			dep("4", "a", task.StateFailed, 6),
		}, nil)
		require.Len(t, restored, 1)
		require.Equal(t, int64(4*60_000), restored[0].MS, "from the first failure of the run")
		require.Equal(t, "restored", restored[0].Outcome)
		require.Equal(t, []Failing{{TeamID: "T", Target: "a", Since: t0.Add(6 * time.Minute)}}, still)
		require.Empty(t, cleared)
	})
	t.Run("AFailingTargetCarriesOver", func(t *testing.T) {
		restored, still, cleared := RestoreFold([]Ended{dep("1", "a", task.StateCompleted, 10)},
			[]Failing{{TeamID: "T", Target: "a", Since: t0}})
		require.Len(t, restored, 1)
		require.Equal(t, int64(10*60_000), restored[0].MS)
		require.Empty(t, still)
		require.Equal(t, []Failing{{TeamID: "T", Target: "a"}}, cleared)
	})
	t.Run("CancelsAndOtherKindsDoNotCount", func(t *testing.T) {
		c := dep("1", "a", task.StateCancelled, 1)
		agent := dep("2", "a", task.StateFailed, 2)
		agent.Kind = task.KindAgent
		restored, still, cleared := RestoreFold([]Ended{c, agent}, nil)
		require.Empty(t, restored)
		require.Empty(t, still)
		require.Empty(t, cleared)
	})
}
