// Command fakeoidc serves the fake OpenID Connect provider of package
// oidctest on a loopback address, for the end-to-end tests: flightdeck
// reads its discovery document at start, so it must run first. It is a
// test tool, never part of the flightdeck binary.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"flightdeck/internal/oidctest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakeoidc:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:18735", "listen address (loopback only)")
	clientID := flag.String("client-id", "flightdeck", "the one client's id")
	clientSecret := flag.String("client-secret", "e2e-client-secret", "the one client's secret")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q: want a loopback IP and port", *addr)
	}
	p, err := oidctest.New("http://"+*addr, *clientID, *clientSecret)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: *addr, Handler: p.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Println("fakeoidc: issuer", p.Issuer)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
