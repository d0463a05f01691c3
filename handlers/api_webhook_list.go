package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

func (h *Handler) apiWebhookList(c echo.Context) error {
	teams := adminTeamIDs(userOf(c))
	if len(teams) == 0 {
		return errForbidden
	}
	ws, err := h.store.WebhookList(c.Request().Context(), teams)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"webhooks": ws})
}
