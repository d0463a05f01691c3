package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/config"
)

// TestHTTPServerCutsSlowBodies: a client that sends its body a byte at a
// time cannot hold a connection past the read timeout.
func TestHTTPServerCutsSlowBodies(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(func(k string) string { return map[string]string{"FLIGHTDECK_READ_TIMEOUT": "300ms"}[k] })
	require.NoError(t, err)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "slow", http.StatusRequestTimeout)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := newHTTPServer(cfg, handler, context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nx")
	require.NoError(t, err)
	start := time.Now()
	// Keep trickling (a byte per 100 ms) until the server gives up on us.
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if _, err := conn.Write([]byte("x")); err != nil || time.Since(start) > 20*time.Second {
				return
			}
		}
	}()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, _ = io.ReadAll(conn) // the answer (if any), then the server's close
	// 300 ms read timeout against a trickle of 20 s: the bound leaves room
	// for a loaded machine and still tells the two apart.
	require.Less(t, time.Since(start), 10*time.Second, "cut off by the read timeout")
	_ = conn.Close()
	<-done
}

// TestServeStopsWhenTheIssuerCannotBeRead: single sign-on's discovery is
// read at start; a provider that does not answer stops serve with the
// variable's name, before anything else starts.
func TestServeStopsWhenTheIssuerCannotBeRead(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	issuer := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	env := map[string]string{"FLIGHTDECK_OIDC_ISSUER": issuer, "FLIGHTDECK_OIDC_CLIENT_ID": "flightdeck",
		"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}
	err = run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	require.ErrorContains(t, err, "FLIGHTDECK_OIDC_ISSUER: error reading the discovery document of "+issuer)
}
