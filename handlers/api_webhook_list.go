package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
)

func (h *Handler) apiWebhookList(c echo.Context) error {
	teams := teamIDsAtLeast(userOf(c), auth.RoleAdmin)
	if len(teams) == 0 {
		return errForbidden
	}
	ws, err := h.store.WebhookList(c.Request().Context(), teams)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"webhooks": ws})
}
