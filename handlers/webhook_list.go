package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/event"
	"flightdeck/workflow/task"
	"flightdeck/workflow/webhook"
)

func (h *Handler) webhookList(c echo.Context) error {
	return h.renderWebhookList(c, http.StatusOK, pages.WebhookListProps{})
}

// renderWebhookList renders the page around p (a create's secret or error).
func (h *Handler) renderWebhookList(c echo.Context, status int, p pages.WebhookListProps) error {
	u := userOf(c)
	teams := u.TeamsWhereMay(task.ActManageWebhooks)
	if len(teams) == 0 {
		return forbiddenTo(task.ActManageWebhooks)
	}
	ws, err := h.store.WebhookList(c.Request().Context(), teams)
	if err != nil {
		return err
	}
	names := map[string]string{}
	for _, m := range u.Memberships {
		names[m.TeamID] = m.Team
		if task.May(m.Role, task.ActManageWebhooks) {
			p.Teams = append(p.Teams, m.Team)
		}
	}
	for _, w := range ws {
		p.Webhooks = append(p.Webhooks, webhookRow(w, names[w.TeamID]))
	}
	for _, t := range event.PublicTypes {
		p.EventTypes = append(p.EventTypes, string(t))
	}
	p.EventTypes = append(p.EventTypes, webhook.ChatTypes...)
	mails, err := h.store.MailDeliveryList(c.Request().Context(), teams, 50)
	if err != nil {
		return err
	}
	for _, m := range mails {
		row := pages.MailDeliveryRow{ID: m.ID, TaskID: m.TaskID, Kind: m.Kind, Recipient: m.Recipient, Subject: m.Subject,
			State: m.State, Attempts: m.Attempts, CreatedAt: m.CreatedAt, NextAttemptAt: m.NextAttemptAt}
		if m.LastError != nil {
			row.LastError = *m.LastError
		}
		p.Mails = append(p.Mails, row)
	}
	p.MailOn = h.cfg.Mail.Enabled()
	if p.Selected == nil && p.Error == "" {
		p.Selected = []string{"task.completed", "task.failed", "task.cancelled"}
	}
	p.CSRFToken = csrfToken(c)
	return h.render(c, status, "Webhooks", "webhooks", pages.WebhookList(p))
}

func webhookRow(w *store.Webhook, team string) pages.WebhookRow {
	r := pages.WebhookRow{ID: w.ID, URL: w.URL, Team: team, Events: w.Events, CreatedAt: w.CreatedAt, Format: w.Format}
	if w.DisabledAt != nil {
		r.Disabled = "disabled"
		if w.DisabledReason != nil {
			r.Disabled = *w.DisabledReason
		}
	}
	return r
}
