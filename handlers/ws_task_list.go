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
	p, f, err := h.taskListFilters(c)
	if err != nil {
		return err
	}
	conn, err := h.acceptWS(c)
	if err != nil || conn == nil {
		return err
	}
	defer conn.close(websocket.StatusNormalClosure, "")
	go conn.drain()
	since, noticed := time.Now(), false
	// deliver runs on the team feed's loop, one change at a time, so
	// noticed needs no lock.
	stop := h.teamFeed.subscribe(userOf(c).TeamIDs(), func(ch *taskChange) bool {
		t := ch.task
		if !t.CreatedAt.After(since) || !matches(f, t) {
			return conn.send(ch.rowHTML())
		}
		if noticed {
			return true
		}
		noticed = true
		var buf bytes.Buffer
		_ = pages.TaskListNotice(p).Render(context.Background(), &buf)
		return conn.send(buf.Bytes())
	}, nil)
	defer stop()
	<-conn.ctx.Done()
	return nil
}
