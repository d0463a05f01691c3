package pages

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDashboardHistory(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	bars := make([]MinuteBar, 60)
	for i := range bars {
		bars[i].Minute = start.Add(time.Duration(i) * time.Minute)
	}
	bars[10] = MinuteBar{Minute: bars[10].Minute, Completed: 4}
	bars[59] = MinuteBar{Minute: bars[59].Minute, Completed: 1, Failed: 1}
	doc := render(t, DashboardLive(DashboardProps{
		Throughput: bars, FinishedHour: 6, CompletedHour: 5,
		Durations: []DurationRow{{Pipeline: "web-service", Count: 3, P50: 1500 * time.Millisecond, P95: 4*time.Minute + 5*time.Second}},
		Health: []HealthRow{
			{Pipeline: "web-service", Env: "staging", Deploys: 5, Failures: 2, FailureRate: .4, Restores: 1, MeanTimeToRestore: 20 * time.Minute},
			{Pipeline: "web-service", Env: "production", Deploys: 1, Failures: 1, FailureRate: 1},
		},
	}))

	require.Equal(t, "83% succeeded", doc.Find(`[data-testid="success-rate"]`).Text())
	require.Equal(t, 2, doc.Find(`[data-testid="bar-ok"]`).Length(), "empty minutes draw no bar")
	require.Equal(t, 1, doc.Find(`[data-testid="bar-bad"]`).Length())
	// The busiest minute (4) fills the chart; the last minute's bars stack.
	require.Equal(t, "96", doc.Find(`[data-testid="bar-ok"]`).First().AttrOr("height", ""))
	require.Equal(t, "590", doc.Find(`[data-testid="bar-bad"]`).AttrOr("x", ""))
	require.Equal(t, "52", doc.Find(`[data-testid="bar-bad"]`).AttrOr("y", ""))
	require.Contains(t, doc.Find(`[data-testid="throughput-chart"]`).AttrOr("aria-label", ""), "5 completed, 1 failed")

	d := doc.Find(`[data-testid="duration-row"][data-pipeline="web-service"]`)
	require.Contains(t, d.Text(), "1.5s")
	require.Contains(t, d.Text(), "4m05s")
	staging := doc.Find(`[data-testid="health-row"][data-env="staging"]`)
	require.Contains(t, staging.Find(`[data-testid="failure-rate"]`).Text(), "40%")
	require.Contains(t, staging.Find(`[data-testid="mttr"]`).Text(), "20m00s")
	require.Equal(t, "—", doc.Find(`[data-testid="health-row"][data-env="production"] [data-testid="mttr"]`).Text())
}
