package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
)

// headAsGet answers HEAD as GET without the body (RFC 9110 §9.3.2): echo
// routes HEAD only where it is registered, so HEAD /api/v1/tasks was a 404.
// The request is served again from the top as a GET (echo routes by the
// method it was first given); net/http still holds the HEAD and drops the
// body the handler writes, keeping its length.
func headAsGet(e *echo.Echo) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.Method != http.MethodHead {
				return next(c)
			}
			get := r.WithContext(context.WithValue(r.Context(), headKey{}, true))
			get.Method = http.MethodGet
			e.ServeHTTP(c.Response().Writer, get)
			return nil
		}
	}
}

type headKey struct{}

// isHead: the request is a HEAD (served as a GET), so a large body need
// not even be read.
func isHead(c echo.Context) bool {
	head, _ := c.Request().Context().Value(headKey{}).(bool)
	return head || c.Request().Method == http.MethodHead
}
