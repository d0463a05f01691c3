package handlers_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// TestTaskPageSocketReaderEndsWithTheHandler: echo reuses a request's
// context once its handler returns, so the task page socket's reader (which
// acts on the page's buttons with that context) must have ended by then.
// The socket's request ends (as at shutdown) while its reader is still
// busy with queued actions; when the handler returns, no goroutine of it
// may be left. Run with -race, the same reuse is also a data race.
func TestTaskPageSocketReaderEndsWithTheHandler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	id := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for range 10 {
		// A server of its own over the same handler, whose requests end
		// when it shuts down, and which looks for leftovers of the socket
		// handler the moment it returns.
		leftover := make(chan string, 1)
		base, shutdown := context.WithCancel(context.Background())
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b.srv.Config.Handler.ServeHTTP(w, r)
			if strings.HasSuffix(r.URL.Path, "/ws") {
				leftover <- socketGoroutines()
			}
		}))
		srv.Config.BaseContext = func(net.Listener) context.Context { return base }
		srv.Start()
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/tasks/"+id+"/ws",
			&websocket.DialOptions{HTTPClient: c, HTTPHeader: http.Header{"Origin": {srv.URL}}})
		require.NoError(t, err)
		ws.SetReadLimit(4 << 20)
		_, _, err = ws.Read(ctx)
		require.NoError(t, err)
		for i := range 20 {
			p := []string{"high", "low", "hotfix", "normal"}[i%4]
			require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(`{"type":"set_priority","priority":"`+p+`","HEADERS":{}}`)))
		}
		// Once the first action is answered the reader is busy with the
		// rest: end the request now.
		for {
			_, frame, err := ws.Read(ctx)
			require.NoError(t, err)
			if strings.Contains(string(frame), `id="flash"`) {
				break
			}
		}
		shutdown()
		// Like a browser, answer the server's close frame (1012).
		go func() {
			for {
				if _, _, err := ws.Read(ctx); err != nil {
					return
				}
			}
		}()
		select {
		case g := <-leftover:
			require.Empty(t, g, "the socket handler returned with its reader still running")
		case <-ctx.Done():
			t.Fatal("the socket handler did not return")
		}
		_ = ws.CloseNow()
		srv.Close()
	}
}

// socketGoroutines returns the stacks of goroutines running the task page
// socket's code (but the one that sends the close frame, which holds
// nothing of the request).
func socketGoroutines() string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		ours := bytes.Contains(g, []byte("handlers.(*Handler).wsTaskHTML")) || bytes.Contains(g, []byte("handlers.(*Handler).htmlAction"))
		if ours && !bytes.Contains(g, []byte("(*wsConn).close")) {
			out = append(out, string(g))
		}
	}
	return strings.Join(out, "\n\n")
}
