package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/store"
)

// taskResolve is the page form for a task in needs_attention (admins).
func (h *Handler) taskResolve(c echo.Context) error {
	ctx := c.Request().Context()
	u := userOf(c)
	t, err := h.store.TaskGet(ctx, u.TeamIDs(), c.Param("id"))
	if err != nil {
		return err
	}
	if !u.RoleIn(t.TeamID).AtLeast(auth.RoleAdmin) {
		return errForbidden
	}
	action := c.FormValue("action")
	if action != "retry" && action != "resolve" {
		return errInvalid("action", "action must be retry or resolve")
	}
	_, err = h.store.TaskResolve(ctx, []string{t.TeamID}, t.ID, action, u.Email, c.FormValue("comment"))
	if errors.Is(err, store.ErrConflict) {
		return &APIError{Status: http.StatusConflict, Code: "conflict", Message: "The task does not need attention any more."}
	}
	if err != nil {
		return err
	}
	h.hub.Publish(t.ID)
	return c.Redirect(http.StatusSeeOther, "/tasks/"+t.ID)
}
