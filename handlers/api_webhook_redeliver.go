package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// apiWebhookRedeliver queues a delivery again (same webhook-id).
func (h *Handler) apiWebhookRedeliver(c echo.Context) error {
	ctx := c.Request().Context()
	w, err := h.webhookForAdmin(ctx, userOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	if err := h.store.WebhookDeliveryRedeliver(ctx, []string{w.TeamID}, w.ID, c.Param("delivery_id")); err != nil {
		return err
	}
	h.auditWebhook(c, w.TeamID, "webhook.redeliver", c.Param("delivery_id"))
	return c.JSON(http.StatusAccepted, map[string]string{"id": c.Param("delivery_id"), "state": "pending"})
}
