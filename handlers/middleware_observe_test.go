package handlers_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"flightdeck/handlers"
	"flightdeck/internal/auth"
	"flightdeck/internal/config"
)

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	for _, path := range []string{"/login", "/healthz", "/api/v1/me", "/no-such-page"} {
		res, _ := b.get(t, c, path, map[string]string{"Accept": "text/html"})
		h := res.Header
		require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), path)
		require.Equal(t, "same-origin", h.Get("Referrer-Policy"), path)
		require.Equal(t, "DENY", h.Get("X-Frame-Options"), path)
		csp := h.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'", "form-action 'self'"} {
			require.Contains(t, csp, d, path)
		}
		require.NotContains(t, csp, "unsafe-eval", path)
	}
}

func TestMetricsShareOneLabelForUnknownMethods(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, m := range []string{"FOOBAR", "BREW", "X-ANYTHING"} {
		req, err := http.NewRequestWithContext(t.Context(), m, b.srv.URL+"/healthz", nil)
		require.NoError(t, err)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
	}
	_, body := b.get(t, b.srv.Client(), "/metrics", nil)
	for _, m := range []string{"FOOBAR", "BREW", "X-ANYTHING"} {
		require.NotContains(t, body, m)
	}
	require.Regexp(t, `flightdeck_http_requests_total\{code="\d+",method="other",route="[^"]+"\} 3`, body, "one series for all of them")
}

// syncBuffer is a log sink tests read while the server writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestRequestLogRedactsTokensInPaths: a one-time login link is a bearer
// secret; the request log names the route, never the token.
func TestRequestLogRedactsTokensInPaths(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var logs syncBuffer
	srv := httptest.NewServer(handlers.New(handlers.Deps{Store: b.store, Config: config.Config{APIRate: 1000},
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}))
	t.Cleanup(srv.Close)
	u, _, err := b.store.UserGetByEmail(t.Context(), "alice@acme.test")
	require.NoError(t, err)
	used, usedHash := auth.NewSecret("")
	require.NoError(t, b.store.LoginLinkCreate(t.Context(), usedHash, u.ID, time.Hour))
	unknown, _ := auth.NewSecret("")
	c := b.browser(t)
	for _, secret := range []string{used, unknown} {
		res, err := c.Get(srv.URL + "/login/link/" + secret)
		require.NoError(t, err)
		res.Body.Close()
	}
	out := logs.String()
	require.Contains(t, out, "/login/link/[REDACTED]")
	require.NotContains(t, out, used)
	require.NotContains(t, out, unknown)
}

// TestStreamsOutliveTheReadTimeout: the server's ReadTimeout cuts clients
// that are slow to send their request; an event stream or a socket, which
// read nothing more or read on for hours, must not be cut by it.
func TestStreamsOutliveTheReadTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const readTimeout = 300 * time.Millisecond
	srv := httptest.NewUnstartedServer(b.srv.Config.Handler)
	srv.Config.ReadTimeout = readTimeout
	srv.Start()
	t.Cleanup(srv.Close)
	id := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/tasks/"+id+"/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.aliceToken)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/v1/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + b.aliceToken}}})
	require.NoError(t, err)
	defer ws.CloseNow()

	// Well past the read timeout (a deliberate wait: the behaviour under
	// test is time), both still carry news.
	<-time.After(3 * readTimeout)
	require.Equal(t, http.StatusOK, b.api(t, "PATCH", "/api/v1/tasks/"+id, b.aliceToken, `{"priority":"high"}`, nil).status)
	sc := bufio.NewScanner(res.Body)
	seen := false
	for !seen && sc.Scan() {
		seen = sc.Text() == "id: 2"
	}
	require.True(t, seen, "the event stream goes on: %v", sc.Err())
	require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(`{"type":"ping","id":"p"}`)))
	_, frame, err := ws.Read(ctx)
	require.NoError(t, err, "the socket goes on")
	require.Contains(t, string(frame), `"pong"`)
}

// TestRequestAbandonedByTheClient: a client that goes away mid-request
// (here while its handler waits) is logged as client-closed (499, at Info,
// saying so) and counted as 499: not a server error, not a 5xx.
func TestRequestAbandonedByTheClient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var logs syncBuffer
	e := handlers.New(handlers.Deps{Store: b.store, Config: config.Config{APIRate: 1000},
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	waiting := make(chan struct{})
	e.GET("/test/wait", func(c echo.Context) error {
		close(waiting)
		<-c.Request().Context().Done()
		return fmt.Errorf("error waiting: %w", c.Request().Context().Err())
	})
	served := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.ServeHTTP(w, r)
		if r.URL.Path == "/test/wait" {
			served <- struct{}{}
		}
	}))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/test/wait", nil)
	require.NoError(t, err)
	failed := make(chan error, 1)
	go func() {
		res, err := srv.Client().Do(req)
		if err == nil {
			res.Body.Close()
		}
		failed <- err
	}()
	<-waiting
	cancel()
	require.ErrorIs(t, <-failed, context.Canceled)
	select {
	case <-served: // the middleware has logged and counted it
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not notice the client went away")
	}

	out := logs.String()
	require.Contains(t, out, `level=INFO msg="Request abandoned: the client went away"`)
	require.Contains(t, out, "status=499")
	require.NotContains(t, out, "status=500")
	require.NotContains(t, out, "level=ERROR")
	res, err := srv.Client().Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	metrics, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Contains(t, string(metrics), `flightdeck_http_requests_total{code="499",method="GET",route="/test/wait"} 1`)
	require.NotRegexp(t, `flightdeck_http_requests_total\{code="5\d\d",method="GET",route="/test/wait"\}`, string(metrics))
}

// A client's X-Request-Id is kept only when it is a plain token; anything
// else is replaced by one of ours, never sent back or logged beside it.
// Before, any value was echoed (and logged and shown on error pages).
func TestClientRequestIDOnlyWhenSafe(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	ours := func(t *testing.T, id string) {
		require.Regexp(t, `^[0-9a-f]{16}$`, id)
	}
	for _, tc := range []struct{ sent, want string }{
		{"abc-123_X.y", "abc-123_X.y"},
		{strings.Repeat("a", 64), strings.Repeat("a", 64)},
		{strings.Repeat("a", 65), ""},
		{"<script>alert(1)</script>", ""},
		{"a b", ""},
		{"a/../b", ""},
		{"caf\u00e9", ""},
		{"", ""},
	} {
		res, body := b.get(t, c, "/no-such-page", map[string]string{"X-Request-Id": tc.sent, "Accept": "text/html"})
		got := res.Header.Values("X-Request-Id")
		require.Len(t, got, 1, "one id, never both: %q", tc.sent)
		if tc.want != "" {
			require.Equal(t, tc.want, got[0])
		} else {
			ours(t, got[0])
			if tc.sent != "" {
				require.NotContains(t, body, tc.sent, "the error page shows our id")
			}
		}
		require.Contains(t, body, got[0], "the error page shows the id")
	}
}
