package handlers

import (
	"context"

	"github.com/labstack/echo/v4"
)

const ctxStream = "stream_ctx"

// deadline bounds how long a request may wait on the database
// (RequestTimeout): a database that refuses, drops or never answers gets
// the client a 503 within it, never a hang. The bound covers connecting,
// waiting for a pooled connection and every statement. Streams (SSE,
// artifact downloads) are bounded until their first read and go on with
// streamContext. The error is answered with the request's own context, so
// the error page still renders after the deadline passed.
func (h *Handler) deadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		ctx, cancel := context.WithTimeout(req.Context(), h.requestTimeout())
		defer cancel()
		c.Set(ctxStream, req.Context())
		c.SetRequest(req.WithContext(ctx))
		err := next(c)
		c.SetRequest(req)
		return err
	}
}

// streamContext is the request's context without the deadline: for the
// part of a stream after its first read.
func streamContext(c echo.Context) context.Context {
	if ctx, ok := c.Get(ctxStream).(context.Context); ok {
		return ctx
	}
	return c.Request().Context()
}
