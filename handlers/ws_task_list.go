package handlers

import (
	"bytes"
	"context"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
)

// wsTaskList keeps an open task list current: every change of a visible
// task re-sends its row (swapped by id, so rows not on the page are
// ignored by the browser), and a task submitted since the page loaded that
// passes the filters shows a notice instead of reshuffling the page.
func (h *Handler) wsTaskList(c echo.Context) error {
	p, err := h.taskListFilters(c)
	if err != nil {
		return err
	}
	conn, err := h.acceptWS(c)
	if err != nil || conn == nil {
		return err
	}
	defer conn.close(websocket.StatusNormalClosure, "")
	go conn.drain()
	u := userOf(c)
	feed := h.hub.SubscribeFeed()
	defer feed.Close()
	since, noticed := time.Now(), false
	for {
		var id string
		select {
		case <-conn.ctx.Done():
			return nil
		case id = <-feed.C:
		}
		t, err := h.store.TaskGet(conn.ctx, u.TeamIDs(), id)
		if err != nil {
			continue // another team's task, or gone
		}
		var buf bytes.Buffer
		if t.CreatedAt.After(since) && matches(p, t) {
			if noticed {
				continue
			}
			noticed = true
			_ = pages.TaskListNotice(p).Render(context.Background(), &buf)
		} else {
			_ = pages.TaskListRow(taskRow(t)).Render(context.Background(), &buf)
		}
		if !conn.send(buf.Bytes()) {
			return nil
		}
	}
}
