package handlers

import (
	"github.com/labstack/echo/v4"

	"flightdeck/workflow/task"
)

// agentInput handles answer and message for agent tasks. Until agent tasks
// run on this server there is no question to answer and no agent to tell.
func (h *Handler) agentInput(c echo.Context, kind, taskID, questionID, text string) error {
	t, err := h.store.TaskGet(c.Request().Context(), userOf(c).TeamIDs(), taskID)
	if err != nil {
		return err
	}
	if t.Kind != task.KindAgent {
		return errInvalid("task_id", "%s is only for agent tasks", kind)
	}
	if kind == "answer" {
		return errNotFound
	}
	return errInvalid("type", "agent tasks are not enabled on this server")
}
