package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
)

// healthz: the process is alive.
func (h *Handler) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz: the database answers within RequestTimeout, so a dead database
// turns this red quickly instead of hanging the probe.
func (h *Handler) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), h.requestTimeout())
	defer cancel()
	if err := h.store.Ping(ctx); err != nil {
		return &APIError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "database unreachable"}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}
