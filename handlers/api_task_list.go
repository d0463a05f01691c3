package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

func (h *Handler) apiTaskList(c echo.Context) error {
	q := c.QueryParams()
	p := store.TaskListParams{
		TeamIDs: userOf(c).TeamIDs(), State: q.Get("state"), Kind: q.Get("kind"),
		Pipeline: q.Get("pipeline"), CreatedBy: q.Get("created_by"), Before: q.Get("before"),
	}
	if p.State != "" && !task.State(p.State).Valid() {
		return errInvalid("state", "unknown state %q", p.State)
	}
	if p.Kind != "" && p.Kind != string(task.KindDeploy) && p.Kind != string(task.KindAgent) {
		return errInvalid("kind", "kind must be deploy or agent")
	}
	if err := taskFilterExtras(q, &p); err != nil {
		return err
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 200 {
			return errInvalid("limit", "limit must be between 1 and 200")
		}
		p.Limit = n
	}
	tasks, next, err := h.store.TaskList(c.Request().Context(), p)
	if errors.Is(err, store.ErrBadCursor) {
		return errInvalid("before", "before is not a cursor this server handed out")
	}
	if err != nil {
		return err
	}
	out := make([]taskJSON, len(tasks))
	for i, t := range tasks {
		out[i] = toTaskJSON(t)
	}
	var nextPtr *string
	if next != "" {
		nextPtr = &next
	}
	return c.JSON(http.StatusOK, map[string]any{"tasks": out, "next": nextPtr})
}
