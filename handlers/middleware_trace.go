package handlers

import (
	"github.com/labstack/echo/v4"

	"flightdeck/internal/tracing"
)

// traceRequests gives each request a span (contract §8) when tracing is
// on, named by route pattern; handlers find it in the request context, so
// a submit's span is what its task's runs link to. Off, it costs a check.
func traceRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !tracing.Enabled() {
			return next(c)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		req := c.Request()
		ctx, span := tracing.StartServer(req.Context(), req.Header, methodLabel(req.Method), route)
		c.SetRequest(req.WithContext(ctx))
		err := next(c) // observe, inside, has answered errors already
		tracing.EndServer(span, c.Response().Status)
		return err
	}
}
