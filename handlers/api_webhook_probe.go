package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

type webhookProbeAnswer struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// apiWebhookProbe sends a test message to a subscription now:
// {"ok","message"} says what the endpoint answered.
func (h *Handler) apiWebhookProbe(c echo.Context) error {
	w, err := h.webhookForAdmin(c.Request().Context(), userOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	msg, ok := h.probe(c, w.ID, w.TeamID)
	return c.JSON(http.StatusOK, webhookProbeAnswer{OK: ok, Message: msg})
}
