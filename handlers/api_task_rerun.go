package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

func (h *Handler) apiTaskRerun(c echo.Context) error {
	key := c.Request().Header.Get("Idempotency-Key")
	if len(key) > maxIdempotencyKey {
		return errInvalid("Idempotency-Key", "the Idempotency-Key header must be at most %d characters", maxIdempotencyKey)
	}
	t, created, err := h.rerun(c.Request().Context(), userOf(c), c.Param("id"), key)
	if err != nil {
		return err
	}
	status := http.StatusAccepted
	if !created {
		status = http.StatusOK
	}
	return c.JSON(status, toTaskJSON(t))
}
