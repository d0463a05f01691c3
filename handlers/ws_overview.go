package handlers

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"flightdeck/internal/config"
	"flightdeck/internal/metrics"
)

// wsOverview keeps an open overview current. The overview's cells depend
// on the viewer (may they promote?), so the feed, shared per team set like
// the dashboard's, does not send cells: after task changes in the teams
// (coalesced) and every refresh it sends a ping element that makes the
// page fetch /overview/live with its own session.
func (h *Handler) wsOverview(c echo.Context) error {
	conn, err := h.acceptWS(c)
	if err != nil || conn == nil {
		return err
	}
	defer conn.close(websocket.StatusNormalClosure, "")
	stop := h.overviewFeed.subscribe(userOf(c).TeamIDs(), conn.send)
	defer stop()
	go conn.drain() // the overview sends nothing
	<-conn.ctx.Done()
	return nil
}

// newOverviewFeed is the dashboard feed's loop with the overview's ping
// as its render.
func newOverviewFeed(h *Handler, reg *metrics.Registry) *dashboardFeed {
	renders := metrics.Registered(reg, metrics.NewCounter("flightdeck_ws_overview_pings_total",
		"Live overview pings sent (one per team set and batch of changes, however many sockets watch)."))
	return &dashboardFeed{
		render:   renderOverviewPing,
		teamsOf:  h.store.TaskTeamIDs,
		hub:      h.hub,
		logger:   h.logger,
		renders:  renders,
		coalesce: cmp.Or(h.cfg.DashboardCoalesce, config.DashboardCoalesceDefault),
		refresh:  cmp.Or(h.cfg.DashboardRefresh, config.DashboardRefreshDefault),
		groups:   map[string]*dashboardGroup{},
	}
}

// renderOverviewPing is the element the socket swaps in: loaded, it
// fetches the viewer's own overview. Its nonce makes every ping a change.
func renderOverviewPing(_ context.Context, _ []string) ([]byte, error) {
	return fmt.Appendf(nil, `<div id="overview-ping" data-nonce="%d" hx-get="/overview/live" hx-trigger="load" `+
		`hx-target="#overview-live" hx-swap="outerHTML"></div>`, time.Now().UnixNano()), nil
}
