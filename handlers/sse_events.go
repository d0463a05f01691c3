package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// sseEvents streams a task's events as Server-Sent Events: first those after
// the cursor, then live ones as the Hub signals them, ending after the
// terminal event; a resume at or past the terminal event of a finished task
// answers 204. Every batch is read from the database after the last seq
// sent, so there is no gap and no repeat however wake-ups arrive.
func (h *Handler) sseEvents(c echo.Context, after int) error {
	ctx := c.Request().Context()
	teams := userOf(c).TeamIDs()
	id := c.Param("id")
	// Subscribe before the first read: an event committed in between still
	// wakes us.
	sub := h.hub.Subscribe(id)
	defer sub.Close()
	t, err := h.store.TaskGet(ctx, teams, id)
	if err != nil {
		return err // 404 before anything is streamed
	}
	events, err := h.store.EventList(ctx, teams, id, after, 1000)
	if err != nil {
		return err
	}
	if len(events) == 0 && t.State.Terminal() {
		// A finished task has nothing after its terminal event: a resume
		// there ends at once, and 204 tells EventSource not to reconnect.
		return c.NoContent(http.StatusNoContent)
	}
	// The first read was bounded by the request's deadline; the stream
	// itself lasts as long as the client stays.
	ctx = streamContext(c)
	w := c.Response()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	poll := time.NewTicker(5 * time.Second) // backup for lost notifications
	defer poll.Stop()
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	for {
		for _, e := range events {
			b, _ := json.Marshal(e)
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, b); err != nil {
				return nil
			}
			after = e.Seq
			if e.Type.Terminal() {
				w.Flush()
				return nil
			}
		}
		w.Flush()
		select {
		case <-ctx.Done():
			return nil
		case <-sub.C:
		case <-poll.C:
		case <-keepAlive.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return nil
			}
			w.Flush()
			continue
		}
		events, err = h.store.EventsAfter(ctx, id, after, 1000)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			requestLogger(c, h.logger).Warn("SSE read failed; retrying", "error", err)
			events = nil
		}
	}
}
