package pages

import (
	"net/url"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
)

func TestDashboardHistory(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 23, 9, 1, 0, 0, time.UTC)
	bars := make([]MinuteBar, 60)
	for i := range bars {
		bars[i].Minute = start.Add(time.Duration(i) * time.Minute)
	}
	bars[10] = MinuteBar{Minute: bars[10].Minute, Completed: 4}
	bars[59] = MinuteBar{Minute: bars[59].Minute, Completed: 1, Failed: 1, Cancelled: 1}
	days := make([]DayBar, 30)
	for i := range days {
		days[i] = DayBar{Day: time.Date(2026, 10, 25+i, 0, 0, 0, 0, time.UTC), Completed: i}
	}
	since := time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC)
	doc := render(t, DashboardLive(DashboardProps{
		HourStart: start, Throughput: bars, CompletedHour: 5, FailedHour: 1, CancelledHour: 1,
		DayStart: since, Daily: days, RunTimeSince: since, HealthSince: since, HealthDays: 30,
		Durations: []DurationRow{{Pipeline: "web-service", Runs: 3, P50: 1500 * time.Millisecond, P95: 4*time.Minute + 5*time.Second}},
		Health: []HealthRow{
			{Pipeline: "web-service", Deploys: 5, Failures: 2, Cancelled: 1, FailureRate: .4, Restores: 1, MeanTimeToRestore: 20 * time.Minute},
			{Pipeline: "canary", Deploys: 1, Failures: 1, FailureRate: 1},
		},
	}))

	require.Equal(t, "83% succeeded", doc.Find(`[data-testid="success-rate"]`).Text(), "5 of 6 that completed or failed; the cancel is neither")
	minutes := doc.Find(`[data-testid="throughput-chart"]`)
	require.Equal(t, 2, minutes.Find(`rect.bar-ok`).Length(), "empty minutes draw no bar")
	require.Equal(t, 1, minutes.Find(`rect.bar-bad`).Length())
	require.Equal(t, 1, minutes.Find(`rect.bar-cancel`).Length())
	// The busiest minute (4) fills the chart, and the y axis says 4.
	require.Equal(t, "96", minutes.Find(`rect.bar-ok`).First().AttrOr("height", ""))
	require.Equal(t, "4", minutes.Find(`[data-testid="chart-y-label"]`).Text())
	// A time axis: every tenth minute back from the last.
	var ticks []string
	minutes.Find(`[data-testid="chart-x-label"]`).Each(func(_ int, s *goquery.Selection) { ticks = append(ticks, s.Text()) })
	require.Equal(t, []string{"09:10", "09:20", "09:30", "09:40", "09:50", "10:00"}, ticks)
	// Each part of a bar links to its tasks.
	href, _ := minutes.Find(`rect.bar-cancel`).Parent().Attr("href")
	u, err := url.Parse(href)
	require.NoError(t, err)
	require.Equal(t, "/tasks", u.Path)
	require.Equal(t, url.Values{"state": {"cancelled"}, "finished_after": {"2026-11-23T10:00:00Z"}, "finished_before": {"2026-11-23T10:01:00Z"}}, u.Query())

	daily := doc.Find(`[data-testid="daily-chart"]`)
	require.Equal(t, "29", daily.Find(`[data-testid="chart-y-label"]`).Text())
	require.Equal(t, "Nov 23", daily.Find(`[data-testid="chart-x-label"]`).Last().Text())
	require.Equal(t, 6, daily.Find(`[data-testid="chart-x-label"]`).Length())

	d := doc.Find(`[data-testid="duration-row"][data-pipeline="web-service"]`)
	require.Contains(t, d.Text(), "1.5s")
	require.Contains(t, d.Text(), "4m05s")
	require.Equal(t, "/tasks?finished_after=2026-10-25T00%3A00%3A00Z&pipeline=web-service&state=completed", d.Find(`[data-testid="duration-runs"]`).AttrOr("href", ""))
	ws := doc.Find(`[data-testid="health-row"][data-pipeline="web-service"]`)
	require.Contains(t, ws.Find(`[data-testid="failure-rate"]`).Text(), "40%")
	require.Equal(t, "/tasks?finished_after=2026-10-25T00%3A00%3A00Z&pipeline=web-service&state=failed", ws.Find(`[data-testid="failures-link"]`).AttrOr("href", ""))
	require.Equal(t, "1", ws.Find(`[data-testid="cancelled"]`).Text())
	require.Contains(t, ws.Find(`[data-testid="mttr"]`).Text(), "20m00s")
	require.Equal(t, "—", doc.Find(`[data-testid="health-row"][data-pipeline="canary"] [data-testid="mttr"]`).Text())
	require.Equal(t, "/tasks?priority=high&state=pending", doc.Find(`[data-testid="pending-high"]`).AttrOr("href", ""))
}
