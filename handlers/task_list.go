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
	p, err := h.taskListFilters(c)
	if err != nil {
		return err
	}
	tasks, next, err := h.store.TaskList(c.Request().Context(), store.TaskListParams{
		TeamIDs: u.TeamIDs(), State: p.State, Pipeline: p.Pipeline, CreatedBy: p.CreatedBy, Before: c.QueryParam("before"),
	})
	if errors.Is(err, store.ErrBadCursor) {
		return errBadRequest("invalid page cursor")
	}
	if err != nil {
		return err
	}
	p.Tasks, p.Next = taskRows(h.pipelines, tasks), next
	return h.render(c, http.StatusOK, "Tasks", "tasks", pages.TaskList(p))
}

// taskListFilters reads the list's filters (shared by the page and its
// socket) with the choices of the filter form.
func (h *Handler) taskListFilters(c echo.Context) (pages.TaskListProps, error) {
	p := pages.TaskListProps{State: c.QueryParam("state"), Pipeline: c.QueryParam("pipeline"), CreatedBy: c.QueryParam("created_by")}
	if p.State != "" && !task.State(p.State).Valid() {
		return p, errInvalid("state", "unknown state %q", p.State)
	}
	for _, s := range task.States {
		p.States = append(p.States, string(s))
	}
	for _, pl := range h.pipelines.All() {
		p.Pipelines = append(p.Pipelines, pl.Name)
	}
	return p, nil
}

// matches reports whether a task passes the list's filters.
func matches(p pages.TaskListProps, t *task.Task) bool {
	return (p.State == "" || p.State == string(t.State)) && (p.Pipeline == "" || p.Pipeline == t.Pipeline) &&
		(p.CreatedBy == "" || p.CreatedBy == t.CreatedBy)
}
