package handlers

import (
	"crypto/subtle"
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
)

const (
	csrfCookie = "fd_csrf"
	csrfHeader = "X-CSRF-Token"
	csrfField  = "_csrf"
	ctxCSRF    = "csrf"
)

// csrf protects cookie-authenticated state changes with a double-submit
// token: an HttpOnly cookie plus the same value rendered into forms (field
// _csrf) and the page's meta tag (sent by htmx as X-CSRF-Token). Another site
// can make the browser send the cookie but cannot read the value. Requests
// with a bearer token carry no ambient credentials, so they are exempt.
func (h *Handler) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token := ""
		if ck, err := c.Cookie(csrfCookie); err == nil && len(ck.Value) >= 32 {
			token = ck.Value
		} else {
			token, _ = auth.NewSecret("")
			setCookie(c, csrfCookie, token, 0)
		}
		c.Set(ctxCSRF, token)
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if c.Request().Header.Get("Authorization") != "" {
			return next(c)
		}
		sent := c.Request().Header.Get(csrfHeader)
		if sent == "" {
			sent = c.FormValue(csrfField)
		}
		if sent == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(token)) != 1 {
			return &APIError{Status: http.StatusForbidden, Code: "forbidden", Message: "missing or invalid CSRF token; reload the page and try again"}
		}
		return next(c)
	}
}

func csrfToken(c echo.Context) string {
	t, _ := c.Get(ctxCSRF).(string)
	return t
}
