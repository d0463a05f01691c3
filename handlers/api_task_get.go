package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

func (h *Handler) apiTaskGet(c echo.Context) error {
	t, err := h.loadTaskJSON(c.Request().Context(), userOf(c).TeamIDs(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}
