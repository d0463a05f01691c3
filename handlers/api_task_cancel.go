package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/workflow/task"
)

func (h *Handler) apiTaskCancel(c echo.Context) error {
	t, err := h.cancelTask(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, toTaskJSON(t))
}

// cancelTask is shared by the API, the WebSocket and the page.
func (h *Handler) cancelTask(c echo.Context, id string) (*task.Task, error) {
	ctx, u := c.Request().Context(), userOf(c)
	t, err := h.taskFor(ctx, u, id, task.ActCancel)
	if err != nil {
		return nil, err
	}
	t, err = h.store.TaskCancel(ctx, []string{t.TeamID}, id, u.Email)
	if err != nil {
		return nil, runControlError(err) // task.CancelOf's why
	}
	return t, err
}
