package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/store"
)

type resolveRequest struct {
	Action  string `json:"action"`
	Comment string `json:"comment"`
}

// apiTaskResolve: an admin retries the failed compensation of a task in
// needs_attention, or marks it resolved (failed).
func (h *Handler) apiTaskResolve(c echo.Context) error {
	var req resolveRequest
	if _, err := readJSON(c, &req); err != nil {
		return err
	}
	if req.Action != "retry" && req.Action != "resolve" {
		return errInvalid("action", "action must be retry or resolve")
	}
	if err := checkComment(req.Comment); err != nil {
		return err
	}
	ctx := c.Request().Context()
	u := userOf(c)
	t, err := h.store.TaskGet(ctx, u.TeamIDs(), c.Param("id"))
	if err != nil {
		return err
	}
	if !u.RoleIn(t.TeamID).AtLeast(auth.RoleAdmin) {
		return &APIError{Status: http.StatusForbidden, Code: "forbidden", Message: "only admins resolve tasks that need attention"}
	}
	t, err = h.store.TaskResolve(ctx, []string{t.TeamID}, t.ID, req.Action, u.Email, req.Comment)
	if errors.Is(err, store.ErrConflict) {
		return &APIError{Status: http.StatusConflict, Code: "conflict", Message: "the task does not need attention"}
	}
	if err != nil {
		return err
	}
	h.hub.Publish(t.ID)
	return c.JSON(http.StatusOK, toTaskJSON(t))
}
