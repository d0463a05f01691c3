package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

type resolveRequest struct {
	Action  string `json:"action"`
	Comment string `json:"comment"`
}

// apiTaskResolve: an admin (task.ActResolve) retries the failed compensation of a task in
// needs_attention, or marks it resolved (failed).
func (h *Handler) apiTaskResolve(c echo.Context) error {
	var req resolveRequest
	if _, err := readJSON(c, &req); err != nil {
		return err
	}
	if req.Action != "retry" && req.Action != "resolve" {
		return errInvalid("action", "action must be retry or resolve")
	}
	comment, err := personText("comment", req.Comment, 0)
	if err != nil {
		return err
	}
	ctx, u := c.Request().Context(), userOf(c)
	t, err := h.taskFor(ctx, u, c.Param("id"), task.ActResolve)
	if err != nil {
		return err
	}
	t, err = h.store.TaskResolve(ctx, []string{t.TeamID}, t.ID, req.Action, u.Email, comment)
	if errors.Is(err, store.ErrConflict) {
		return &APIError{Status: http.StatusConflict, Code: "conflict", Message: "the task does not need attention"}
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toTaskJSON(t))
}
