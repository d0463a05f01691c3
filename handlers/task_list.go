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
	p, f, err := h.taskListFilters(c)
	if err != nil {
		return err
	}
	f.TeamIDs, f.Before = u.TeamIDs(), c.QueryParam("before")
	// The database's clock, which stamps created_at (the web server's may
	// be off), read before the list: a task submitted meanwhile is shown
	// and not announced (newTask), or announced rather than missed.
	ctx := c.Request().Context()
	if p.LoadedAt, err = h.store.Now(ctx); err != nil {
		return err
	}
	tasks, next, err := h.store.TaskList(ctx, f)
	if errors.Is(err, store.ErrBadCursor) {
		return errBadRequest("invalid page cursor")
	}
	if err != nil {
		return err
	}
	skipped, err := skippedSteps(ctx, h.store, tasks)
	if err != nil {
		return err
	}
	p.Tasks, p.Next = taskRows(h.pipelines, tasks, skipped), next
	return h.render(c, http.StatusOK, "Tasks", "tasks", pages.TaskList(p))
}

// taskListFilters reads the list's filters (shared by the page and its
// socket) with the choices of the filter form, and as the store takes them.
func (h *Handler) taskListFilters(c echo.Context) (pages.TaskListProps, store.TaskListParams, error) {
	q := c.QueryParams()
	p := pages.TaskListProps{State: q.Get("state"), Pipeline: q.Get("pipeline"), CreatedBy: q.Get("created_by"),
		Kind: q.Get("kind"), Priority: q.Get("priority"), FinishedAfter: q.Get("finished_after"), FinishedBefore: q.Get("finished_before")}
	f, err := taskFilters(q)
	if err != nil {
		return p, f, err
	}
	for _, s := range task.States {
		p.States = append(p.States, string(s))
	}
	for _, pl := range h.pipelines.All() {
		p.Pipelines = append(p.Pipelines, pl.Name)
	}
	return p, f, nil
}

// matches reports whether a task passes the list's filters.
func matches(f store.TaskListParams, t *task.Task) bool {
	return (f.State == "" || f.State == string(t.State)) && (f.Pipeline == "" || f.Pipeline == t.Pipeline) &&
		(f.CreatedBy == "" || f.CreatedBy == t.CreatedBy) && (f.Kind == "" || f.Kind == string(t.Kind)) && matchesExtras(f, t)
}
