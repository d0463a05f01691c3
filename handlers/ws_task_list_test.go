package handlers

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/task"
)

// TestListRowsNeverSendAnOlderRow: a catch-up loaded before a live change
// went out must not replace the newer row; tasks not on the page pass.
func TestListRowsNeverSendAnOlderRow(t *testing.T) {
	t.Parallel()
	conn := &wsConn{out: make(chan []byte, 8), ctx: context.Background()}
	change := func(id string, seq int) *taskChange {
		return &taskChange{task: &task.Task{ID: id, Kind: task.KindAgent, State: task.StateRunning, LastSeq: seq}}
	}
	rows := newListRows([]string{"a", "b"})
	require.True(t, rows.send(conn, change("a", 5)))                 // live
	require.True(t, rows.send(conn, change("a", 4), change("b", 2))) // catch-up, loaded earlier
	require.True(t, rows.send(conn, change("x", 1), change("x", 1))) // not on the page
	require.Len(t, conn.out, 3)
	require.Contains(t, string(<-conn.out), `id="task-row-a"`)
	second := string(<-conn.out)
	require.NotContains(t, second, `id="task-row-a"`, "the older row of a is not sent")
	require.Contains(t, second, `id="task-row-b"`)
	require.Equal(t, 2, strings.Count(string(<-conn.out), `id="task-row-x"`), "rows of other tasks are not remembered")
}
