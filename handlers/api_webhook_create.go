package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/workflow/task"
	"flightdeck/workflow/webhook"
)

type webhookCreateRequest struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Team   string   `json:"team"`
	// Format: "standard" (default) or "slack" (contract §12).
	Format string `json:"format"`
}

// webhookCreated is the one answer that shows the secret.
type webhookCreated struct {
	*store.Webhook
	Secret string `json:"secret"`
}

func (h *Handler) apiWebhookCreate(c echo.Context) error {
	u := userOf(c)
	var req webhookCreateRequest
	if _, err := readJSON(c, &req); err != nil {
		return err
	}
	team, err := adminTeam(u, req.Team, task.ActManageWebhooks)
	if err != nil {
		return err
	}
	w, err := h.createWebhook(c, team.TeamID, req.URL, req.Format, req.Events)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, webhookCreated{Webhook: w, Secret: w.Secret})
}

// createWebhook validates and stores a subscription with a new secret.
func (h *Handler) createWebhook(c echo.Context, teamID, url, format string, events []string) (*store.Webhook, error) {
	ctx := c.Request().Context()
	switch format {
	case "":
		format = webhook.FormatStandard
	case webhook.FormatStandard, webhook.FormatSlack:
	default:
		return nil, errInvalid("format", "format must be standard or slack, got %q", format)
	}
	if err := h.checkWebhookURL(ctx, "url", url); err != nil {
		return nil, err
	}
	events, err := checkWebhookEvents(events)
	if err != nil {
		return nil, err
	}
	w, err := h.store.WebhookCreate(ctx, store.WebhookCreateParams{
		TeamID: teamID, URL: url, Events: events, Format: format, Secret: webhook.NewSecret(), CreatedByID: userOf(c).ID,
	})
	if err != nil {
		return nil, err
	}
	h.auditWebhook(c, teamID, "webhook.create", w.ID)
	return w, nil
}
