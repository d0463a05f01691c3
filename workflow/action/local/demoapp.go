package local

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// BrokenVersion is the demo app version whose health check fails.
const BrokenVersion = "0.0.0-broken"

// SlowDelay is how long a "-slow" version takes to answer /.
const SlowDelay = 300 * time.Millisecond

// RunDemoApp is "flightdeck demoapp --version V [--addr 127.0.0.1:0]
// [--instance ID]": a tiny web app that shows its version on / and answers
// /healthz (200, or 503 for BrokenVersion). Its first stdout line is
// "listening on HOST:PORT" (the provider reads the port from it); it writes
// nothing else there. It runs until ctx ends.
func RunDemoApp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demoapp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "version to show (required)")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	instance := fs.String("instance", "", "instance id (lets flightdeck recognise its process)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("demoapp: unexpected argument %q", fs.Arg(0))
	}
	if !versionRE.MatchString(*version) {
		return fmt.Errorf("demoapp: --version must match %s", versionRE)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("demoapp: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if *version == BrokenVersion {
			http.Error(w, "broken on purpose", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	// Versions that misbehave on purpose, for a canary to catch (contract
	// §11): "-errors" fails every other request for /, "-slow" answers
	// after 300 ms. Their /healthz passes, so they deploy.
	failing, slow := strings.Contains(*version, "-errors"), strings.Contains(*version, "-slow")
	var served atomic.Int64
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if slow {
			select {
			case <-time.After(SlowDelay):
			case <-r.Context().Done():
				return
			}
		}
		if failing && served.Add(1)%2 == 0 {
			http.Error(w, "failing on purpose (an -errors version)", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("X-Demoapp-Version", *version)
		fmt.Fprintf(w, `<!doctype html><title>demo app %[1]s</title><h1 data-testid="demoapp-version">demo app version %[1]s</h1><p>instance %[2]s, host %[3]s</p>`,
			html.EscapeString(*version), html.EscapeString(*instance), html.EscapeString(r.Host))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if _, err := fmt.Fprintf(stdout, "listening on %s\n", ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
