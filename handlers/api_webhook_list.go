package handlers

import (
	"net/http"

	"flightdeck/workflow/task"

	"github.com/labstack/echo/v4"
)

func (h *Handler) apiWebhookList(c echo.Context) error {
	teams := userOf(c).TeamsWhereMay(task.ActManageWebhooks)
	if len(teams) == 0 {
		return forbiddenTo(task.ActManageWebhooks)
	}
	ws, err := h.store.WebhookList(c.Request().Context(), teams)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"webhooks": ws})
}
