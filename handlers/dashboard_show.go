package handlers

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
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

// Windows of the dashboard's history.
const (
	throughputWindow = time.Hour
	durationWindow   = 7 * 24 * time.Hour
	healthWindow     = 30 * 24 * time.Hour
)

// loadDashboardHistory fills the charts and tables of finished work: the
// last hour minute by minute (every minute has its bar, empty or not),
// run times per pipeline, and change-failure rate and time to restore.
func (h *Handler) loadDashboardHistory(ctx context.Context, teams []string, now time.Time, p *pages.DashboardProps) error {
	first := now.UTC().Truncate(time.Minute).Add(-throughputWindow + time.Minute)
	minutes, err := h.store.TaskThroughput(ctx, teams, first)
	if err != nil {
		return err
	}
	p.Throughput = make([]pages.MinuteBar, throughputWindow/time.Minute)
	for i := range p.Throughput {
		p.Throughput[i].Minute = first.Add(time.Duration(i) * time.Minute)
	}
	for _, m := range minutes {
		if i := int(m.Minute.Sub(first) / time.Minute); i >= 0 && i < len(p.Throughput) {
			p.Throughput[i].Completed, p.Throughput[i].Failed = m.Completed, m.Failed
			p.CompletedHour += m.Completed
			p.FinishedHour += m.Completed + m.Failed
		}
	}
	durations, err := h.store.PipelineDurations(ctx, teams, now.Add(-durationWindow))
	if err != nil {
		return err
	}
	for _, d := range durations {
		p.Durations = append(p.Durations, pages.DurationRow{Pipeline: d.Pipeline, Count: d.Count, P50: d.P50, P95: d.P95})
	}
	health, err := h.store.DeployHealthList(ctx, teams, now.Add(-healthWindow))
	if err != nil {
		return err
	}
	for _, d := range health {
		p.Health = append(p.Health, pages.HealthRow{Pipeline: d.Pipeline, Env: d.Env, Deploys: d.Deploys, Failures: d.Failures,
			FailureRate: d.ChangeFailureRate(), Restores: d.Restores, MeanTimeToRestore: d.MeanTimeToRestore})
	}
	return nil
}
