package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
)

func (h *Handler) apiWebhookDeliveries(c echo.Context) error {
	ctx := c.Request().Context()
	w, err := h.webhookForAdmin(ctx, userOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	limit := 100
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return errInvalid("limit", "limit must be between 1 and 1000")
		}
		limit = n
	}
	ds, err := h.store.WebhookDeliveryList(ctx, []string{w.TeamID}, w.ID, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"deliveries": ds})
}
