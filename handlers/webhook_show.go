package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
)

// webhookShow is a subscription's delivery log.
func (h *Handler) webhookShow(c echo.Context) error {
	ctx := c.Request().Context()
	u := userOf(c)
	w, err := h.webhookForAdmin(ctx, u, c.Param("id"))
	if err != nil {
		return err
	}
	ds, err := h.store.WebhookDeliveryList(ctx, []string{w.TeamID}, w.ID, 200)
	if err != nil {
		return err
	}
	var team string
	for _, m := range u.Memberships {
		if m.TeamID == w.TeamID {
			team = m.Team
		}
	}
	p := pages.WebhookShowProps{Webhook: webhookRow(w, team), CSRFToken: csrfToken(c)}
	if c.QueryParam("redelivered") != "" {
		p.Notice = "Delivery queued again."
	}
	for _, d := range ds {
		row := pages.WebhookDeliveryRow{ID: d.ID, TaskID: d.TaskID, Event: d.Event, State: d.State,
			Attempts: d.Attempts, CreatedAt: d.CreatedAt, NextAttemptAt: d.NextAttemptAt}
		if d.LastStatus != nil {
			row.LastStatus = *d.LastStatus
		}
		if d.LastError != nil {
			row.LastError = *d.LastError
		}
		p.Deliveries = append(p.Deliveries, row)
	}
	return h.render(c, http.StatusOK, "Webhook", "webhooks", pages.WebhookShow(p))
}
