package handlers

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

const ctxLogger = "logger"

func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func requestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}

// observe gives each request a logger carrying its request id, logs the
// request once it is answered, and records HTTP metrics by route pattern
// (never by raw path: ids would explode the label set).
func (h *Handler) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		logger := h.logger.With("request_id", requestID(c))
		c.Set(ctxLogger, logger)
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		elapsed := time.Since(start)
		h.metrics.requests.WithLabelValues(c.Request().Method, route, strconv.Itoa(status)).Inc()
		h.metrics.duration.WithLabelValues(c.Request().Method, route).Observe(elapsed.Seconds())
		if route != "/healthz" && route != "/metrics" && route != "/static/*" {
			attrs := []any{"method", c.Request().Method, "path", c.Request().URL.Path, "status", status, "duration_ms", elapsed.Milliseconds()}
			if u := userOf(c); u != nil {
				attrs = append(attrs, "user", u.Email)
			}
			requestLogger(c, h.logger).Info("Request", attrs...)
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
