package handlers

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
)

// wsOverview keeps an open overview current: after its teams' task changes
// (coalesced, like the dashboard's) and every refresh, the socket sends a
// nudge that makes the page fetch its grid again. The grid is rendered per
// viewer (what they may promote), so the socket carries no grid itself.
func (h *Handler) wsOverview(c echo.Context) error {
	conn, err := h.acceptWS(c)
	if err != nil || conn == nil {
		return err
	}
	defer conn.close(websocket.StatusNormalClosure, "")
	stop := h.overviewFeed.subscribe(userOf(c).TeamIDs(), conn.send)
	defer stop()
	defer h.watchApprovals(conn, userOf(c), shownBadge(c.QueryParam("badge")))()
	go conn.drain() // the overview sends nothing
	<-conn.ctx.Done()
	return nil
}

var overviewNudges atomic.Uint64

// renderOverviewNudge is the socket's nudge: an out-of-band swap of an
// element that htmx, on loading it, answers with a GET of the overview
// (its pipeline filter included) whose grid replaces the page's. Each
// nudge differs (n), so it is a new element that loads again.
func renderOverviewNudge(context.Context, []string) ([]byte, error) {
	n := strconv.FormatUint(overviewNudges.Add(1), 10)
	return []byte(`<div id="overview-live" hx-swap-oob="true"><div hx-get="/overview" hx-include="#overview-pipeline" hx-trigger="load"` +
		` hx-select="#overview" hx-target="#overview" hx-swap="outerHTML" data-n="` + n + `"></div></div>`), nil
}
