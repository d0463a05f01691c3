package handlers

import (
	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
)

// wsDashboard keeps an open dashboard current: the dashboard feed sends it
// the live section of the user's teams after task changes (coalesced) and
// every refresh, rendered once for all sockets of the same teams.
func (h *Handler) wsDashboard(c echo.Context) error {
	conn, err := h.acceptWS(c)
	if err != nil || conn == nil {
		return err
	}
	defer conn.close(websocket.StatusNormalClosure, "")
	stop := h.dashFeed.subscribe(userOf(c).TeamIDs(), conn.send)
	defer stop()
	defer h.watchApprovals(conn, userOf(c), shownBadge(c.QueryParam("badge")))()
	// Reading starts once subscribed, so a client's ping that is answered
	// means the socket gets every later change.
	go conn.drain() // the dashboard sends nothing
	<-conn.ctx.Done()
	return nil
}
