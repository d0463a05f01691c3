package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"flightdeck/workflow/task"
)

// apiTaskEvents lists a task's events after a seq; with Accept:
// text/event-stream it streams them (sse_events.go).
func (h *Handler) apiTaskEvents(c echo.Context) error {
	after, err := parseAfterSeq(c)
	if err != nil {
		return err
	}
	if strings.Contains(c.Request().Header.Get("Accept"), "text/event-stream") {
		return h.sseEvents(c, after)
	}
	events, err := h.store.EventList(c.Request().Context(), userOf(c).TeamIDs(), c.Param("id"), after, 1000)
	if err != nil {
		return err
	}
	if events == nil {
		events = []task.Event{}
	}
	return c.JSON(http.StatusOK, map[string]any{"events": events})
}

// parseAfterSeq reads Last-Event-ID (a resuming EventSource; it wins) or
// after_seq.
func parseAfterSeq(c echo.Context) (int, error) {
	field, v := "after_seq", c.QueryParam("after_seq")
	if id := c.Request().Header.Get("Last-Event-ID"); id != "" {
		field, v = "Last-Event-ID", id
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errInvalid(field, "%s must be a non-negative integer", field)
	}
	return n, nil
}
