package handlers_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/config"
)

// dashClient is a dashboard socket whose frames a goroutine reads, so that
// Ping (which needs a concurrent reader) can tell when the server is
// subscribed: it reads, and so answers pings, only once it is.
type dashClient struct {
	t      *testing.T
	c      *websocket.Conn
	frames chan []byte
}

func (b *testBundle) dialDashboard(t *testing.T, token string) *dashClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+"/dashboard/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	require.NoError(t, err)
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { _ = c.CloseNow() })
	d := &dashClient{t: t, c: c, frames: make(chan []byte, 16)}
	go func() {
		defer close(d.frames)
		for {
			_, msg, err := c.Read(context.Background())
			if err != nil {
				return
			}
			d.frames <- msg
		}
	}()
	require.NoError(t, c.Ping(ctx))
	return d
}

// next returns the next frame.
func (d *dashClient) next() []byte {
	d.t.Helper()
	select {
	case msg, ok := <-d.frames:
		require.True(d.t, ok, "socket closed")
		return msg
	case <-time.After(15 * time.Second):
		d.t.Fatal("no dashboard frame")
		return nil
	}
}

func statValue(t *testing.T, frame []byte, testid string) string {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(frame))
	require.NoError(t, err)
	require.Equal(t, 1, doc.Find(`[data-testid="dashboard-live"]`).Length())
	return strings.TrimSpace(doc.Find(`[data-testid="` + testid + `"] .stat-value`).Text())
}

func (b *testBundle) dashboardRenders(t *testing.T) float64 {
	t.Helper()
	_, body := b.get(t, b.srv.Client(), "/metrics", nil)
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(line, "flightdeck_ws_dashboard_renders_total "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no flightdeck_ws_dashboard_renders_total in /metrics")
	return 0
}

func TestWebSocketDashboardFansOutOneRender(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(c *config.Config) {
		c.DashboardCoalesce = 10 * time.Millisecond
		c.DashboardRefresh = time.Hour // only changes render here
	})
	create := func(token string) {
		b.api(t, "POST", "/api/v1/tasks", token, `{"kind":"deploy","pipeline":"noop"}`, nil)
	}
	// Rival has two pending tasks already, so its render tells itself apart.
	// Their notifications reach the hub before any dashboard socket opens
	// (a create returns once its NOTIFY is sent, not received): the team
	// feed's frames say when.
	seen, _, err := b.dialWS(t, b.bobToken, nil)
	require.NoError(t, err)
	seen.send(`{"type":"subscribe","topic":"team","id":"t"}`)
	require.Equal(t, "ack", seen.next()["type"])
	create(b.bobToken)
	create(b.bobToken)
	seen.nextTask()
	seen.nextTask()

	const n = 10
	acme := make([]*dashClient, n)
	for i := range acme {
		acme[i] = b.dialDashboard(t, b.aliceToken)
	}
	rival := b.dialDashboard(t, b.bobToken)
	require.Zero(t, b.dashboardRenders(t))

	// One acme change: one render, the same bytes on every acme socket.
	create(b.aliceToken)
	first := acme[0].next()
	require.Equal(t, "1", statValue(t, first, "stat-pending"))
	for _, ws := range acme[1:] {
		require.Equal(t, first, ws.next())
	}
	require.Equal(t, 1.0, b.dashboardRenders(t))

	// The rival socket got nothing of it: its first frame is its own three.
	create(b.bobToken)
	require.Equal(t, "3", statValue(t, rival.next(), "stat-pending"))
	require.Equal(t, 2.0, b.dashboardRenders(t))

	// And no acme socket got rival's: their next frame is acme's next change.
	create(b.aliceToken)
	for _, ws := range acme {
		require.Equal(t, "2", statValue(t, ws.next(), "stat-pending"))
	}
	require.Equal(t, 3.0, b.dashboardRenders(t))
	create(b.bobToken)
	require.Equal(t, "4", statValue(t, rival.next(), "stat-pending"), "nothing of acme's came in between")
}
