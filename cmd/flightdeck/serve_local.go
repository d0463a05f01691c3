package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"flightdeck/internal/config"
	"flightdeck/store"
	"flightdeck/workflow/action/local"
)

// serveLocalTLS serves handler over HTTPS on addr with the local CA's
// certificates, chosen by SNI (--local-tls-addr). It returns the bound
// address and a shutdown function.
func serveLocalTLS(addr string, st *store.Store, handler http.Handler, logger *slog.Logger) (string, func(context.Context), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("error listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: handler, TLSConfig: local.NewCertSource(st).TLSConfig(),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: config.ReadTimeoutDefault, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("Local TLS listener stopped", "error", err)
		}
	}()
	return ln.Addr().String(), func(ctx context.Context) { _ = srv.Shutdown(ctx) }, nil
}
