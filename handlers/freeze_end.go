package handlers

import (
	"net/http"

	"flightdeck/workflow/task"

	"github.com/labstack/echo/v4"
)

// freezeEnd is the environments page's "End now" on a freeze.
func (h *Handler) freezeEnd(c echo.Context) error {
	u := userOf(c)
	if _, err := h.store.FreezeEnd(c.Request().Context(), u.TeamsWhereMay(task.ActManageFreezes), c.Param("id"), u.Email); err != nil {
		if ae := toAPIError(h.freezeEndError(c, err)); ae.Status < 500 {
			return h.renderEnvironments(c, ae.Status, "The freeze was not ended: "+ae.Message)
		}
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/environments")
}
