package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/views/pages"
	"flightdeck/workflow/task"
)

func (h *Handler) dashboardShow(c echo.Context) error {
	p, err := h.loadDashboard(c.Request().Context(), userOf(c))
	if err != nil {
		return err
	}
	return h.render(c, http.StatusOK, "Dashboard", "dashboard", pages.Dashboard(p))
}

func (h *Handler) loadDashboard(ctx context.Context, u *auth.User) (pages.DashboardProps, error) {
	counts, err := h.store.TaskQueueCounts(ctx, u.TeamIDs())
	if err != nil {
		return pages.DashboardProps{}, err
	}
	workers, err := h.store.WorkerList(ctx)
	if err != nil {
		return pages.DashboardProps{}, err
	}
	alerts, err := h.store.LocalAlertList(ctx, u.TeamIDs(), true, 50)
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
	return p, nil
}
