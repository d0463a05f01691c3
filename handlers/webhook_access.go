package handlers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/store"
	"flightdeck/workflow/event"
	"flightdeck/workflow/task"
	"flightdeck/workflow/webhook"
)

// webhookForAdmin loads a webhook of one of u's teams (404 otherwise) whose
// webhooks u manages (403 otherwise).
func (h *Handler) webhookForAdmin(ctx context.Context, u *auth.User, id string) (*store.Webhook, error) {
	w, err := h.store.WebhookGet(ctx, u.TeamIDs(), id)
	if err != nil {
		return nil, err
	}
	if !u.May(w.TeamID, task.ActManageWebhooks) {
		return nil, forbiddenTo(task.ActManageWebhooks)
	}
	return w, nil
}

// checkWebhookURL validates a webhook URL, SSRF guard included; field names
// the request field for the 422.
func (h *Handler) checkWebhookURL(ctx context.Context, field, raw string) error {
	if strings.TrimSpace(raw) == "" {
		return errInvalid(field, "%s is required", field)
	}
	if err := h.webhookGuard.CheckURL(ctx, raw); err != nil {
		return errInvalid(field, "%s %v", field, err)
	}
	return nil
}

// checkWebhookEvents validates a subscription's event types.
func checkWebhookEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, errInvalid("events", "events must list at least one event type, e.g. task.completed")
	}
	var out []string
	for i, e := range events {
		if !slices.Contains(event.PublicTypes, task.EventType(e)) && !slices.Contains(webhook.ChatTypes, e) {
			return nil, errInvalid(fmt.Sprintf("events.%d", i), "unknown event type %q", e)
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// auditWebhook records a webhook change in the audit log; a failure to
// record is logged, not shown (the change itself happened).
func (h *Handler) auditWebhook(c echo.Context, teamID, action, target string) {
	if err := h.store.AuditAdd(c.Request().Context(), teamID, userOf(c).Email, action, target, nil); err != nil {
		h.logger.Warn("Could not write audit log", "action", action, "error", err)
	}
}

// checkTaskWebhook validates a task's own webhook: secret first (its rule
// needs no lookup), then the URL with the SSRF guard.
func (h *Handler) checkTaskWebhook(ctx context.Context, url, secret string) error {
	if len(secret) < 16 {
		return errInvalid("webhook.secret", "webhook.secret must be at least 16 characters")
	}
	if len(secret) > 1024 {
		return errInvalid("webhook.secret", "webhook.secret must be at most 1024 characters")
	}
	return h.checkWebhookURL(ctx, "webhook.url", url)
}
