package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

func (h *Handler) webhookDelete(c echo.Context) error {
	ctx := c.Request().Context()
	w, err := h.webhookForAdmin(ctx, userOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	if err := h.store.WebhookDelete(ctx, []string{w.TeamID}, w.ID); err != nil {
		return err
	}
	h.auditWebhook(c, w.TeamID, "webhook.delete", w.ID)
	return c.Redirect(http.StatusSeeOther, "/webhooks")
}
