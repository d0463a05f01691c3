package handlers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

// The notice of new tasks announces a task created after the page loaded
// that passes the filters, and never one the page shows: with a web server
// whose clock runs behind the database's (or a task submitted while the
// page read its tasks), a shown task is also created after since.
func TestListNoticeSkipsShownTasks(t *testing.T) {
	since := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	f := store.TaskListParams{Pipeline: "noop"}
	rows := newListRows([]string{"shown"})
	at := func(id, pipeline string, created time.Time) *task.Task {
		return &task.Task{ID: id, Pipeline: pipeline, CreatedAt: created}
	}
	require.True(t, newTask(f, since, rows, at("new", "noop", since.Add(time.Millisecond))))
	require.False(t, newTask(f, since, rows, at("shown", "noop", since.Add(time.Second))), "shown on the page")
	require.False(t, newTask(f, since, rows, at("old", "noop", since.Add(-time.Millisecond))), "created before the page loaded")
	require.False(t, newTask(f, since, rows, at("other", "web-service", since.Add(time.Second))), "filtered out")
}
