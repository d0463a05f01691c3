package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

// taskResolve is the page form for a task in needs_attention.
func (h *Handler) taskResolve(c echo.Context) error {
	ctx, u := c.Request().Context(), userOf(c)
	t, err := h.taskFor(ctx, u, c.Param("id"), task.ActResolve)
	if err != nil {
		return err
	}
	action := c.FormValue("action")
	if action != "retry" && action != "resolve" {
		return errInvalid("action", "action must be retry or resolve")
	}
	comment, err := personText("comment", c.FormValue("comment"), 0)
	if err != nil {
		return err
	}
	_, err = h.store.TaskResolve(ctx, []string{t.TeamID}, t.ID, action, u.Email, comment)
	if errors.Is(err, store.ErrConflict) {
		return &APIError{Status: http.StatusConflict, Code: "conflict", Message: "The task does not need attention any more."}
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/tasks/"+t.ID)
}
