package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/task"
)

func (h *Handler) taskList(c echo.Context) error {
	u := userOf(c)
	tasks, next, err := h.store.TaskList(c.Request().Context(), store.TaskListParams{
		TeamIDs:   u.TeamIDs(),
		State:     c.QueryParam("state"),
		Pipeline:  c.QueryParam("pipeline"),
		CreatedBy: c.QueryParam("created_by"),
		Before:    c.QueryParam("before"),
	})
	if errors.Is(err, store.ErrBadCursor) {
		return errBadRequest("invalid page cursor")
	}
	if err != nil {
		return err
	}
	return h.render(c, http.StatusOK, "Tasks", "tasks", pages.TaskList(pages.TaskListProps{Tasks: taskRows(tasks), Next: next}))
}

func taskRows(tasks []*task.Task) []pages.TaskRow {
	rows := make([]pages.TaskRow, len(tasks))
	for i, t := range tasks {
		rows[i] = pages.TaskRow{
			ID: t.ID, Kind: string(t.Kind), Pipeline: t.Pipeline, State: string(t.State),
			Priority: t.Priority.String(), CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt,
		}
	}
	return rows
}
