package handlers

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
	"flightdeck/workflow/rollup"
	"flightdeck/workflow/task"
)

func (h *Handler) dashboardShow(c echo.Context) error {
	p, err := h.loadDashboard(c.Request().Context(), userOf(c).TeamIDs())
	if err != nil {
		return err
	}
	return h.render(c, http.StatusOK, "Dashboard", "dashboard", pages.Dashboard(p))
}

// renderDashboardLive loads and renders the live section of teamIDs'
// dashboard: what a dashboard socket is sent.
func (h *Handler) renderDashboardLive(ctx context.Context, teamIDs []string) ([]byte, error) {
	p, err := h.loadDashboard(ctx, teamIDs)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := pages.DashboardLive(p).Render(ctx, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// loadDashboard loads what the dashboard shows of teamIDs (and the workers,
// which serve everybody).
func (h *Handler) loadDashboard(ctx context.Context, teamIDs []string) (pages.DashboardProps, error) {
	counts, err := h.store.TaskQueueCounts(ctx, teamIDs)
	if err != nil {
		return pages.DashboardProps{}, err
	}
	workers, err := h.store.WorkerList(ctx)
	if err != nil {
		return pages.DashboardProps{}, err
	}
	alerts, err := h.store.LocalAlertList(ctx, teamIDs, true, 50)
	if err != nil {
		return pages.DashboardProps{}, err
	}
	p := pages.DashboardProps{PendingByPriority: map[string]int{}}
	now := time.Now()
	for _, a := range alerts {
		p.Alerts = append(p.Alerts, pages.AlertRow{Host: a.Host, Message: a.Message, Age: now.Sub(a.OpenedAt)})
	}
	for _, qc := range counts {
		switch qc.State {
		case task.StatePending, task.StateScheduled:
			p.PendingByPriority[qc.Priority.String()] += qc.Count
			p.Pending += qc.Count
			if age := now.Sub(qc.Oldest); age > p.OldestPending {
				p.OldestPending = age
			}
		case task.StateRunning, task.StateCompensating:
			p.Running += qc.Count
		case task.StateAwaitingApproval, task.StateAwaitingInput:
			p.Waiting += qc.Count
		case task.StateNeedsAttention:
			p.NeedsAttention += qc.Count
		case task.StatePaused: // apart: a person holds these, not the queue
			p.Paused += qc.Count
		}
	}
	for _, w := range workers {
		p.Workers = append(p.Workers, pages.WorkerRow{ID: w.ID, Host: w.Host, Slots: w.Slots, Busy: w.Busy, HeartbeatAge: now.Sub(w.HeartbeatAt)})
	}
	if err := h.loadDashboardHistory(ctx, teamIDs, now, &p); err != nil {
		return pages.DashboardProps{}, err
	}
	return p, nil
}

// Windows of the dashboard's history: the last hour minute by minute,
// and whole UTC days (today included) for the daily chart, run times and
// DORA figures.
const (
	throughputWindow = time.Hour
	dailyDays        = 30
	runTimeDays      = 7
	healthDays       = 30
)

// loadDashboardHistory fills the charts and tables of finished work. The
// last hour reads its tasks; everything longer reads the rollups that the
// writes ending tasks keep, so the page costs the same at a million tasks.
func (h *Handler) loadDashboardHistory(ctx context.Context, teams []string, now time.Time, p *pages.DashboardProps) error {
	p.HourStart = now.UTC().Truncate(time.Minute).Add(-throughputWindow + time.Minute)
	minutes, err := h.store.TaskThroughput(ctx, teams, p.HourStart)
	if err != nil {
		return err
	}
	p.Throughput = make([]pages.MinuteBar, throughputWindow/time.Minute)
	for i := range p.Throughput {
		p.Throughput[i].Minute = p.HourStart.Add(time.Duration(i) * time.Minute)
	}
	for _, m := range minutes {
		if i := int(m.Minute.Sub(p.HourStart) / time.Minute); i >= 0 && i < len(p.Throughput) {
			p.Throughput[i].Completed, p.Throughput[i].Failed, p.Throughput[i].Cancelled = m.Completed, m.Failed, m.Cancelled
			p.CompletedHour += m.Completed
			p.FailedHour += m.Failed
			p.CancelledHour += m.Cancelled
		}
	}
	today := now.UTC().Truncate(24 * time.Hour)
	p.DayStart = today.AddDate(0, 0, -(max(dailyDays, healthDays) - 1))
	p.RunTimeSince = today.AddDate(0, 0, -(runTimeDays - 1))
	rollups, err := h.store.TaskRollupList(ctx, teams, p.DayStart, p.RunTimeSince)
	if err != nil {
		return err
	}
	for _, d := range rollup.DailyOf(rollups, today.AddDate(0, 0, -(dailyDays-1)), dailyDays) {
		p.Daily = append(p.Daily, pages.DayBar{Day: d.Day, Completed: d.Completed, Failed: d.Failed, Cancelled: d.Cancelled})
	}
	for _, d := range rollup.RunTimesOf(rollups, p.RunTimeSince) {
		p.Durations = append(p.Durations, pages.DurationRow{Pipeline: d.Pipeline, Runs: d.Runs, P50: d.P50, P95: d.P95,
			MeanWaited: d.MeanWaited})
	}
	p.HealthSince, p.HealthDays = today.AddDate(0, 0, -(healthDays-1)), healthDays
	deploys := func(name string) bool {
		pl, ok := h.pipelines.Get(name)
		return ok && pl.Deploys()
	}
	for _, d := range rollup.DeployHealthOf(rollups, p.HealthSince, deploys) {
		p.Health = append(p.Health, pages.HealthRow{Pipeline: d.Pipeline, Deploys: d.Deploys, Failures: d.Failures,
			Cancelled: d.Cancelled, FailureRate: d.ChangeFailureRate(), Restores: d.Restores, MeanTimeToRestore: d.MeanTimeToRestore})
	}
	return nil
}
