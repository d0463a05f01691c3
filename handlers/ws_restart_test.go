package handlers_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// TestSocketsSayRestartOnShutdown: when the server shuts down (serve
// cancels every request's context), every socket closes with 1012, after
// which browsers reconnect (to another process behind the proxy); after
// 1000 htmx's ws extension would give up and the page would silently stop
// updating.
func TestSocketsSayRestartOnShutdown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)
	base, shutdown := context.WithCancel(context.Background())
	defer shutdown()
	srv := httptest.NewUnstartedServer(b.srv.Config.Handler)
	srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	srv.Start()
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var socks []*websocket.Conn
	for _, path := range []string{"/tasks/ws", "/tasks/" + id + "/ws", "/dashboard/ws", "/api/v1/ws"} {
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+path,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + b.aliceToken}}})
		require.NoError(t, err, path)
		defer ws.CloseNow()
		socks = append(socks, ws)
	}
	shutdown()
	for _, ws := range socks {
		var err error
		for err == nil {
			_, _, err = ws.Read(ctx)
		}
		require.Equal(t, websocket.StatusServiceRestart, websocket.CloseStatus(err), "%v", err)
	}
}
