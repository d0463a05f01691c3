package rollup_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/store"
	"flightdeck/workflow/rollup"
)

var day0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

func TestBucketUpperDoublesEveryFourBuckets(t *testing.T) {
	require.Equal(t, time.Millisecond, rollup.BucketUpper(0))
	require.Equal(t, 2*time.Millisecond, rollup.BucketUpper(4))
	require.Equal(t, 1024*time.Millisecond, rollup.BucketUpper(40))
	for b := 1; b < 80; b++ {
		require.Greater(t, rollup.BucketUpper(b), rollup.BucketUpper(b-1), "bucket %d", b)
	}
}

func TestRunTimesOfReadsPercentilesWithinTheirBucket(t *testing.T) {
	// 100 completed runs: 50 in bucket 40 (512 ms … 1024 ms], 50 in bucket
	// 44 (1024 … 2048 ms]; a failure and an older day do not count.
	rs := []store.Rollup{
		{Day: day0, Pipeline: "web", Outcome: store.OutcomeCompleted, Bucket: 40, Tasks: 50, Ms: 50 * 800, WaitedMs: 50 * 100},
		{Day: day0.AddDate(0, 0, 1), Pipeline: "web", Outcome: store.OutcomeCompleted, Bucket: 44, Tasks: 50, Ms: 50 * 1500},
		{Day: day0, Pipeline: "web", Outcome: store.OutcomeFailed, Bucket: 0, Tasks: 7, Ms: 7},
		{Day: day0.AddDate(0, 0, -1), Pipeline: "web", Outcome: store.OutcomeCompleted, Bucket: 60, Tasks: 1000, Ms: 1000 * 30000},
		{Day: day0, Pipeline: "", Outcome: store.OutcomeCompleted, Bucket: 0, Tasks: 2, Ms: 0},
	}
	got := rollup.RunTimesOf(rs, day0.Add(13*time.Hour)) // since's UTC day counts whole
	require.Len(t, got, 2)
	require.Equal(t, "", got[0].Pipeline, "sorted by pipeline, agent tasks first")
	require.Equal(t, 2, got[0].Runs)
	web := got[1]
	require.Equal(t, 100, web.Runs)
	require.Equal(t, 1150*time.Millisecond, web.Mean, "the mean is exact")
	require.Equal(t, 50*time.Millisecond, web.MeanWaited)
	// p50 falls at the top of bucket 40; p95 90% into bucket 44.
	require.Equal(t, rollup.BucketUpper(40).Round(time.Millisecond), web.P50)
	lo, hi := rollup.BucketUpper(43), rollup.BucketUpper(44)
	require.Equal(t, (lo + time.Duration(0.9*float64(hi-lo))).Round(time.Millisecond), web.P95)
	require.Greater(t, web.P95, web.P50)
}

func TestDeployHealthOf(t *testing.T) {
	rs := []store.Rollup{
		{Day: day0, Pipeline: "web", Outcome: store.OutcomeCompleted, Tasks: 8},
		{Day: day0, Pipeline: "web", Outcome: store.OutcomeFailed, Tasks: 2},
		{Day: day0, Pipeline: "web", Outcome: store.OutcomeCancelled, Tasks: 3},
		{Day: day0, Pipeline: "web", Outcome: store.OutcomeRestored, Tasks: 2, Ms: 2 * 60000},
		{Day: day0, Pipeline: "noop", Outcome: store.OutcomeFailed, Tasks: 5},
		{Day: day0.AddDate(0, 0, -3), Pipeline: "web", Outcome: store.OutcomeFailed, Tasks: 100},
	}
	got := rollup.DeployHealthOf(rs, day0, func(p string) bool { return p == "web" })
	require.Equal(t, []rollup.DeployHealth{{Pipeline: "web", Deploys: 10, Failures: 2, Cancelled: 3, Restores: 2, MeanTimeToRestore: time.Minute}}, got)
	require.InDelta(t, 0.2, got[0].ChangeFailureRate(), 1e-9)
	require.Zero(t, rollup.DeployHealth{}.ChangeFailureRate(), "no deploys: no rate, no division by zero")
}

func TestDailyOfHasEveryDay(t *testing.T) {
	rs := []store.Rollup{
		{Day: day0, Outcome: store.OutcomeCompleted, Tasks: 4},
		{Day: day0, Pipeline: "web", Outcome: store.OutcomeCompleted, Tasks: 1},
		{Day: day0.AddDate(0, 0, 2), Outcome: store.OutcomeFailed, Tasks: 2},
		{Day: day0.AddDate(0, 0, 2), Outcome: store.OutcomeCancelled, Tasks: 1},
		{Day: day0.AddDate(0, 0, 2), Outcome: store.OutcomeRestored, Tasks: 9},
		{Day: day0.AddDate(0, 0, -1), Outcome: store.OutcomeCompleted, Tasks: 50},
		{Day: day0.AddDate(0, 0, 3), Outcome: store.OutcomeCompleted, Tasks: 50},
	}
	got := rollup.DailyOf(rs, day0.Add(20*time.Hour), 3)
	require.Equal(t, []rollup.DayCount{
		{Day: day0, Completed: 5},
		{Day: day0.AddDate(0, 0, 1)},
		{Day: day0.AddDate(0, 0, 2), Failed: 2, Cancelled: 1},
	}, got)
}
