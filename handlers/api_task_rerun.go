package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

func (h *Handler) apiTaskRerun(c echo.Context) error {
	key, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	t, created, err := h.rerun(c.Request().Context(), userOf(c), c.Param("id"), key)
	if err != nil {
		return err
	}
	status := http.StatusAccepted
	if !created {
		status = http.StatusOK
	}
	out, err := h.submittedJSON(c.Request().Context(), t)
	if err != nil {
		return err
	}
	return c.JSON(status, out)
}
