package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/handlers"
	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/internal/dbtest"
	"flightdeck/store"
)

// dbProxy stands between flightdeck and the test database and fails on
// demand: forward (the database is up), blackhole (connections are accepted,
// and those already open go silent, but nothing is ever answered) or drop
// (accepted and closed at once, as by a server going down). Closing its
// listener makes the port refuse connections.
type dbProxy struct {
	t      *testing.T
	target string
	mode   atomic.Value // "forward", "blackhole", "drop"
	done   chan struct{}
	mu     sync.Mutex
	ln     net.Listener
	addr   string
	conns  map[net.Conn]bool
}

func newDBProxy(t *testing.T, target string) *dbProxy {
	p := &dbProxy{t: t, target: target, done: make(chan struct{}), conns: map[net.Conn]bool{}}
	p.mode.Store("forward")
	t.Cleanup(func() { close(p.done); p.refuse() })
	p.listen("127.0.0.1:0")
	return p
}

// set switches the mode; drop also cuts the connections already open.
func (p *dbProxy) set(mode string) {
	p.mode.Store(mode)
	if mode == "drop" {
		p.cut()
	}
}

func (p *dbProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *dbProxy) track(c net.Conn, open bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if open {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
}
func (p *dbProxy) is(mode string) bool { return p.mode.Load() == mode }

// refuse closes the listener and the open connections: the server is gone
// and its port refuses connections.
func (p *dbProxy) refuse() {
	p.cut()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
}

// listen accepts on addr (the old address again after refuse).
func (p *dbProxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	require.NoError(p.t, err)
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
}

func (p *dbProxy) serve(c net.Conn) {
	p.track(c, true)
	defer p.track(c, false)
	defer c.Close()
	switch {
	case p.is("drop"):
		return
	case p.is("blackhole"):
		<-p.done
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if p.is("blackhole") {
				<-p.done // silence: nothing goes through any more
				return
			}
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go pipe(up, c)
	pipe(c, up)
}

// TestDatabaseOutageAnswers503Quickly: with the database refused, dropping
// connections, or black-holed (accepting but never answering, also on
// connections already open), the API answers 503 unavailable within 2 s,
// /readyz 503 and /healthz 200; once it is back, 200 again. The timeouts
// are the defaults.
func TestDatabaseOutageAnswers503Quickly(t *testing.T) {
	t.Parallel()
	real := dbtest.DB(t)
	rc := real.Config().ConnConfig
	st := store.New(real)
	userID, err := st.UserAdd(t.Context(), store.UserAddParams{Email: "ops@acme.test", Team: "acme", Role: auth.RoleViewer})
	require.NoError(t, err)
	session, sessionHash := auth.NewSecret("")
	require.NoError(t, st.SessionCreate(t.Context(), sessionHash, userID, time.Hour))
	token, hash := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, st.TokenCreate(t.Context(), "ops@acme.test", "t", hash))

	proxy := newDBProxy(t, net.JoinHostPort(rc.Host, strconv.Itoa(int(rc.Port))))
	dbURL := (&url.URL{Scheme: "postgres", User: url.UserPassword(rc.User, rc.Password), Host: proxy.addr,
		Path: "/" + rc.Database, RawQuery: "sslmode=disable"}).String()
	pool, err := store.Open(t.Context(), dbURL, 4)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	cfg, err := config.Load(func(string) string { return "" })
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError + 1}))
	srv := httptest.NewServer(checkAPI(t, handlers.New(handlers.Deps{Store: store.New(pool), Config: cfg, Logger: logger})))
	t.Cleanup(srv.Close)

	get := func(path string) (int, string, time.Duration) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		if strings.HasPrefix(path, "/api/") {
			req.Header.Set("Authorization", "Bearer "+token)
		} else {
			req.AddCookie(&http.Cookie{Name: "fd_session", Value: session})
		}
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err, "answered, not hung")
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body), time.Since(start)
	}
	up := func(name string) {
		t.Helper()
		require.Eventually(t, func() bool {
			status, _, _ := get("/api/v1/tasks")
			return status == http.StatusOK
		}, 30*time.Second, 50*time.Millisecond, "%s: the API answers again once the database is back", name)
		status, _, _ := get("/readyz")
		require.Equal(t, http.StatusOK, status)
	}
	down := func(name string) {
		t.Helper()
		for range 3 { // the first finds open connections, the next new ones
			status, body, took := get("/api/v1/tasks")
			require.Equal(t, http.StatusServiceUnavailable, status, "%s: %s", name, body)
			require.JSONEq(t, fmt.Sprintf(`{"error":{"code":"unavailable","message":%q}}`, "the database is unavailable; try again shortly"), body)
			require.Less(t, took, 2*time.Second, name)
			t.Logf("%s: GET /api/v1/tasks answered 503 in %v", name, took.Round(time.Millisecond))
		}
		status, body, took := get("/tasks")
		require.Equal(t, http.StatusServiceUnavailable, status, name)
		require.Contains(t, body, `data-testid="error-page"`, "%s: the page says so", name)
		require.Less(t, took, 2*time.Second, name)
		status, _, took = get("/readyz")
		require.Equal(t, http.StatusServiceUnavailable, status, name)
		require.Less(t, took, 2*time.Second, name)
		t.Logf("%s: GET /readyz answered 503 in %v", name, took.Round(time.Millisecond))
		status, _, _ = get("/healthz")
		require.Equal(t, http.StatusOK, status, "%s: liveness does not depend on the database", name)
	}

	up("start")
	addr := proxy.addr
	proxy.refuse()
	down("refused")
	proxy.listen(addr)
	up("refused")

	proxy.set("drop")
	down("dropped")
	proxy.set("forward")
	up("dropped")

	proxy.set("blackhole")
	down("black-holed")
	proxy.set("forward")
	up("black-holed")
}
