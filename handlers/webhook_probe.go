package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
	"flightdeck/workflow/webhook"
)

// webhookProbe sends a test message to a subscription from the webhooks
// page and shows what the endpoint answered.
func (h *Handler) webhookProbe(c echo.Context) error {
	ctx := c.Request().Context()
	u := userOf(c)
	w, err := h.webhookForAdmin(ctx, u, c.Param("id"))
	if err != nil {
		return err
	}
	p := pages.WebhookListProps{}
	p.Notice, p.NoticeOK = h.probe(c, w.ID, w.TeamID)
	return h.renderWebhookList(c, http.StatusOK, p)
}

// probe sends the test message of subscription id and says how it went.
func (h *Handler) probe(c echo.Context, id, teamID string) (string, bool) {
	ctx := c.Request().Context()
	w, err := h.store.WebhookGet(ctx, []string{teamID}, id)
	if err != nil {
		return "The webhook is gone.", false
	}
	team := ""
	for _, m := range userOf(c).Memberships {
		if m.TeamID == teamID {
			team = m.Team
		}
	}
	status, err := webhook.Probe(ctx, h.webhookGuard, h.cfg.WebhookTimeout, w, team, h.cfg.PublicURL())
	h.auditWebhook(c, teamID, "webhook.test", w.ID)
	switch {
	case err != nil:
		return "Test message to " + w.URL + " failed: " + err.Error() + ".", false
	case status < 200 || status > 299:
		return "Test message to " + w.URL + ": the endpoint answered " + strconv.Itoa(status) + " " + http.StatusText(status) + ".", false
	}
	return "Test message sent to " + w.URL + ": the endpoint answered " + strconv.Itoa(status) + " " + http.StatusText(status) + ".", true
}
