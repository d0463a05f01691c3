package handlers

import (
	"net/http"

	"flightdeck/workflow/task"

	"github.com/labstack/echo/v4"
)

func (h *Handler) apiFreezeDelete(c echo.Context) error {
	u := userOf(c)
	// Another team's freeze does not exist for the caller; a team's freeze
	// one the caller may not end is refused.
	f, err := h.store.FreezeEnd(c.Request().Context(), u.TeamsWhereMay(task.ActManageFreezes), c.Param("id"), u.Email)
	if err != nil {
		return h.freezeEndError(c, err)
	}
	return c.JSON(http.StatusOK, apiFreeze(f))
}
