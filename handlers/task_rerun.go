package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// taskRerun is the Re-run button of a finished task, and the Redeploy and
// Roll back buttons of the environments page (re-runs of an earlier
// deploy): it submits and shows the new task.
func (h *Handler) taskRerun(c echo.Context) error {
	t, _, err := h.rerun(c.Request().Context(), userOf(c), c.Param("id"), "")
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/tasks/"+t.ID)
}
