package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
)

func (h *Handler) apiTaskList(c echo.Context) error {
	q := c.QueryParams()
	p, err := taskFilters(q)
	if err != nil {
		return err
	}
	p.TeamIDs, p.Before = userOf(c).TeamIDs(), q.Get("before")
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
