package handlers

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

func (h *Handler) apiTaskPause(c echo.Context) error {
	t, err := h.pauseTask(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toTaskJSON(t))
}

// pauseTask is shared by the API, the WebSocket and the page (contract §10).
func (h *Handler) pauseTask(c echo.Context, id string) (*task.Task, error) {
	ctx, u := c.Request().Context(), userOf(c)
	t, err := h.taskFor(ctx, u, id, task.ActPause)
	if err != nil {
		return nil, err
	}
	t, err = h.store.TaskPause(ctx, []string{t.TeamID}, id, u.Email)
	if err != nil {
		return nil, runControlError(err)
	}
	return t, nil
}

// runControlError says why a pause or resume was refused, in the words of
// the rule that refused it.
func runControlError(err error) error {
	why := func(sentinel error) string {
		return strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
	}
	switch {
	case errors.Is(err, store.ErrTerminal):
		return &APIError{Status: http.StatusConflict, Code: "conflict", Message: "the task already ended"}
	case errors.Is(err, store.ErrConflict):
		return &APIError{Status: http.StatusConflict, Code: "conflict", Message: why(store.ErrConflict)}
	case errors.Is(err, store.ErrForbidden):
		return &APIError{Status: http.StatusForbidden, Code: "forbidden", Message: why(store.ErrForbidden)}
	case errors.Is(err, store.ErrInvalid):
		return errInvalid("comment", "%s", why(store.ErrInvalid))
	}
	return err
}
