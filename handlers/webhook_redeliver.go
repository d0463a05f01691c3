package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

func (h *Handler) webhookRedeliver(c echo.Context) error {
	ctx := c.Request().Context()
	w, err := h.webhookForAdmin(ctx, userOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	if err := h.store.WebhookDeliveryRedeliver(ctx, []string{w.TeamID}, w.ID, c.Param("delivery_id")); err != nil {
		return err
	}
	h.auditWebhook(c, w.TeamID, "webhook.redeliver", c.Param("delivery_id"))
	return c.Redirect(http.StatusSeeOther, "/webhooks/"+w.ID+"?redelivered=1")
}
