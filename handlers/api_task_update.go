package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

type taskUpdateRequest struct {
	Priority string `json:"priority"`
}

func (h *Handler) apiTaskUpdate(c echo.Context) error {
	var req taskUpdateRequest
	if _, err := readJSON(c, &req); err != nil {
		return err
	}
	if req.Priority == "" {
		return errInvalid("priority", "priority is required")
	}
	t, err := h.setPriority(c, c.Param("id"), req.Priority)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toTaskJSON(t))
}

// setPriority is shared by the API and the WebSocket.
func (h *Handler) setPriority(c echo.Context, id, priority string) (*task.Task, error) {
	p, err := task.ParsePriority(priority)
	if err != nil {
		return nil, errInvalid("priority", "%v", err)
	}
	ctx, u := c.Request().Context(), userOf(c)
	t, err := h.taskFor(ctx, u, id, task.ActSetPriority)
	if err != nil {
		return nil, err
	}
	t, err = h.store.TaskSetPriority(ctx, []string{t.TeamID}, id, p, u.Email)
	if errors.Is(err, store.ErrTerminal) {
		return nil, &APIError{Status: http.StatusConflict, Code: "conflict", Message: "the task already ended"}
	}
	return t, err
}
