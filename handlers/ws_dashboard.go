package handlers

import (
	"bytes"
	"context"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
)

// wsDashboard keeps an open dashboard current: whenever tasks change it
// re-renders the dashboard's live section (at most twice a second, and
// every 10 s for ages and heartbeats).
func (h *Handler) wsDashboard(c echo.Context) error {
	conn, err := h.acceptWS(c)
	if err != nil || conn == nil {
		return err
	}
	defer conn.close(websocket.StatusNormalClosure, "")
	go conn.drain() // the dashboard sends nothing
	u := userOf(c)
	feed := h.hub.SubscribeFeed()
	defer feed.Close()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-conn.ctx.Done():
			return nil
		case <-feed.C:
			// Coalesce a burst of changes into one render.
			time.Sleep(500 * time.Millisecond) //nolint:forbidigo // rate limit, not synchronisation
			for len(feed.C) > 0 {
				<-feed.C
			}
		case <-tick.C:
		}
		p, err := h.loadDashboard(conn.ctx, u)
		if err != nil {
			continue
		}
		var buf bytes.Buffer
		_ = pages.DashboardLive(p).Render(context.Background(), &buf)
		if !conn.send(buf.Bytes()) {
			return nil
		}
	}
}
