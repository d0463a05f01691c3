package handlers

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/task"
)

// maxListRows bounds the rows a list socket catches up: a page shows at
// most 200 (store.TaskListParams.Limit).
const maxListRows = 200

// wsTaskList keeps an open task list current: every change of a visible
// task re-sends its row (swapped by id, so rows not on the page are
// ignored by the browser), and a task submitted since the page loaded that
// passes the filters shows a notice instead of reshuffling the page. The
// page names its rows (rows=id,…) and when it loaded (since=RFC 3339):
// each time the socket (re)connects the rows are sent as they are now, and
// the notice shown if a task came after since, so what happened while no
// socket listened (a dropped connection, a server restart) catches up.
func (h *Handler) wsTaskList(c echo.Context) error {
	p, f, err := h.taskListFilters(c)
	if err != nil {
		return err
	}
	// Unknown, malformed and other teams' ids load nothing (TaskGetMany).
	var visible []string
	if q := c.QueryParam("rows"); q != "" {
		visible = strings.Split(q, ",")
	}
	if len(visible) > maxListRows {
		return errInvalid("rows", "at most %d rows", maxListRows)
	}
	since, err := listSince(c.QueryParam("since"))
	if err != nil {
		return err
	}
	conn, err := h.acceptWS(c)
	if err != nil || conn == nil {
		return err
	}
	defer conn.close(websocket.StatusNormalClosure, "")
	go conn.drain()
	rows := newListRows(visible)
	teams := userOf(c).TeamIDs()
	// The notice goes out once, from the feed's loop or the catch-up below,
	// whichever sees a new task first.
	var noticed atomic.Bool
	notice := func() bool {
		if !noticed.CompareAndSwap(false, true) {
			return true
		}
		var buf bytes.Buffer
		_ = pages.TaskListNotice(p).Render(context.Background(), &buf)
		return conn.send(buf.Bytes())
	}
	stop := h.teamFeed.subscribe(teams, func(ch *taskChange) bool {
		if newTask(f, since, rows, ch.task) {
			return notice()
		}
		return rows.send(conn, ch)
	}, nil)
	defer stop()
	defer h.watchApprovals(conn, userOf(c), shownBadge(c.QueryParam("badge")))()
	// Loaded after subscribing, so no change falls between the two; the
	// rows' seqs keep a live change sent meanwhile from being undone.
	tasks, err := h.store.TaskGetMany(conn.ctx, teams, visible)
	var skipped map[string]int
	if err == nil {
		skipped, err = skippedSteps(conn.ctx, h.store, tasks)
	}
	if err == nil && len(tasks) > 0 && !rows.send(conn, h.catchUp(tasks, skipped)...) {
		return nil
	}
	// The newest task that passes the filters: one newer than the page was
	// submitted while no socket listened.
	var newest []*task.Task
	if err == nil {
		f.TeamIDs, f.Limit = teams, 1
		newest, _, err = h.store.TaskList(conn.ctx, f)
	}
	if err != nil {
		// 1011: the browser reconnects (with backoff) and tries again.
		requestLogger(c, h.logger).Warn("Task list socket could not catch up", "error", err)
		conn.close(websocket.StatusInternalError, "could not catch up; reconnect")
		return nil
	}
	if len(newest) > 0 && newTask(f, since, rows, newest[0]) && !notice() {
		return nil
	}
	<-conn.ctx.Done()
	return nil
}

// newTask reports whether t is a task for the list's notice: it passes the
// filters, was created after the page loaded (since, the database's clock)
// and is not one of the rows the page shows (one submitted while the page
// read its tasks is both).
func newTask(f store.TaskListParams, since time.Time, rows *listRows, t *task.Task) bool {
	return t.CreatedAt.After(since) && !rows.has(t.ID) && matches(f, t)
}

// listSince reads the page's load time; a page that does not say counts
// from now.
func listSince(q string) (time.Time, error) {
	if q == "" {
		return time.Now(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, q)
	if err != nil {
		return t, errInvalid("since", "not an RFC 3339 time")
	}
	return t, nil
}

// catchUp wraps loaded tasks as changes, to render their rows as the feed
// does.
func (h *Handler) catchUp(tasks []*task.Task, skipped map[string]int) []*taskChange {
	out := make([]*taskChange, len(tasks))
	for i, t := range tasks {
		out[i] = &taskChange{task: t, pipelines: h.pipelines, skipped: skipped[t.ID]}
	}
	return out
}

// listRows is what a list socket sent of the page's rows: the seq each
// row was last sent at, so an older state (a catch-up loaded before a live
// change went out) never replaces a newer one. Other tasks' rows (the
// browser ignores them) pass without being remembered.
type listRows struct {
	mu   sync.Mutex
	seqs map[string]int
}

func newListRows(ids []string) *listRows {
	r := &listRows{seqs: make(map[string]int, len(ids))}
	for _, id := range ids {
		r.seqs[id] = 0
	}
	return r
}

// has reports whether the page shows task id.
func (r *listRows) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.seqs[id]
	return ok
}

// send sends the rows of changes that are new, in one message; false when
// the socket is gone.
func (r *listRows) send(conn *wsConn, changes ...*taskChange) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts [][]byte
	for _, ch := range changes {
		if seq, ok := r.seqs[ch.task.ID]; ok {
			if ch.task.LastSeq <= seq {
				continue
			}
			r.seqs[ch.task.ID] = ch.task.LastSeq
		}
		parts = append(parts, ch.rowHTML())
	}
	switch len(parts) {
	case 0:
		return true
	case 1:
		return conn.send(parts[0]) // a live row, shared by every socket: not copied
	}
	return conn.send(bytes.Join(parts, nil))
}
