package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

const ctxLogger = "logger"

func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// assignRequestID gives each request one id: the client's X-Request-Id when
// it is a plain token (at most 64 of A-Z a-z 0-9 . _ -), else a new one.
// A client's id goes into logs and the error page, so anything else
// (newlines, markup, megabytes) is replaced, never kept beside ours. The
// request carries the same id on, to a proxied local app too.
func assignRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rid := c.Request().Header.Get(echo.HeaderXRequestID)
		if !safeRequestID(rid) {
			rid = newRequestID()
		}
		c.Request().Header.Set(echo.HeaderXRequestID, rid)
		c.Response().Header().Set(echo.HeaderXRequestID, rid)
		return next(c)
	}
}

func safeRequestID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func requestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}

// statusClientClosed is nginx's 499: the client went away before the
// answer. It is never sent (there is nobody to send it to), only logged
// and counted, so an abandoned request is not taken for a server error.
const statusClientClosed = 499

// observe gives each request a logger carrying its request id, logs the
// request once it is answered, and records HTTP metrics by route pattern
// (never by raw path: ids would explode the label set).
func (h *Handler) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		logger := h.logger.With("request_id", requestID(c))
		c.Set(ctxLogger, logger)
		// The client's own context, taken before inner middleware swaps
		// in one with a deadline (which ends when they return).
		client := c.Request().Context()
		err := next(c)
		gone := err != nil && errors.Is(client.Err(), context.Canceled)
		switch {
		case gone && !c.Response().Committed:
			c.Response().Status = statusClientClosed
		case err != nil && !gone:
			c.Error(err)
		}
		status := c.Response().Status
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		elapsed := time.Since(start)
		method := methodLabel(c.Request().Method)
		h.metrics.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
		h.metrics.duration.WithLabelValues(method, route).Observe(elapsed.Seconds())
		if route != "/healthz" && route != "/metrics" && route != "/static/*" {
			attrs := []any{"method", method, "path", logPath(c), "status", status, "duration_ms", elapsed.Milliseconds()}
			if u := userOf(c); u != nil {
				attrs = append(attrs, "user", u.Email)
			}
			if gone {
				requestLogger(c, h.logger).Info("Request abandoned: the client went away", append(attrs, "error", err)...)
			} else {
				requestLogger(c, h.logger).Info("Request", attrs...)
			}
		}
		return nil
	}
}

// recoverPanic turns a handler panic into a 500, logged with its stack, so
// the process lives on.
func (h *Handler) recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				requestLogger(c, h.logger).Error("Handler panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return next(c)
	}
}

// methodLabel keeps the metrics' label set bounded: any client can invent
// methods, so those HTTP does not define share one label.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// secretParams are route parameters that are bearer secrets (the one-time
// login link): logs show the route with the value redacted.
var secretParams = map[string]bool{"token": true}

// logPath is the request path as logged, secrets in it redacted.
func logPath(c echo.Context) string {
	path := c.Request().URL.Path
	for i, name := range c.ParamNames() {
		if v := c.ParamValues(); secretParams[name] && i < len(v) && v[i] != "" {
			path = strings.Replace(path, v[i], "[REDACTED]", 1)
		}
	}
	return path
}

// securityHeaders: flightdeck's own pages load only their own scripts,
// styles and sockets (htmx injects its indicator style, hence inline
// styles), cannot be framed, are never sniffed into another type and send
// no full URL (which may carry a filter or a link token) to other sites.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "+
			"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		return next(c)
	}
}
