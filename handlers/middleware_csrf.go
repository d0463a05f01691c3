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

var errCSRF = &APIError{Status: http.StatusForbidden, Code: "forbidden", Message: "missing or invalid CSRF token; reload the page and try again"}

// csrf protects cookie-authenticated state changes twice over. The request
// must come from this site (Go's cross-origin protection: Sec-Fetch-Site,
// else Origin against Host; FLIGHTDECK_ALLOWED_ORIGINS are trusted), and it
// must carry the session's token (auth.CSRFToken), rendered into forms
// (_csrf) and the page's meta tag (sent by htmx as X-CSRF-Token). A bearer
// token carries no ambient credential, so such requests are exempt; so are
// anonymous ones, which the auth checks after this answer (401, or the
// login page), except the login form (csrfLogin). It runs after authenticate.
func (h *Handler) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		csrfToken(c) // an anonymous visitor's cookie is set before the handler writes
		if safeMethod(c.Request().Method) || c.Request().Header.Get("Authorization") != "" {
			return next(c)
		}
		if _, ok := c.Get(ctxSessionSecret).(string); !ok {
			return next(c)
		}
		if err := h.checkCSRF(c); err != nil {
			return err
		}
		return next(c)
	}
}

// csrfLogin guards the one form anonymous visitors post: a login forced from
// another site would sign the victim into the attacker's account. Its token
// is the double-submitted fd_csrf cookie; the origin check is what makes a
// planted cookie useless here, and the login itself moves to a session-bound
// token.
func (h *Handler) csrfLogin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := h.checkCSRF(c); err != nil {
			return err
		}
		return next(c)
	}
}

func (h *Handler) checkCSRF(c echo.Context) error {
	if err := h.crossOrigin.Check(c.Request()); err != nil {
		return &APIError{Status: http.StatusForbidden, Code: "forbidden", Message: "cross-origin request refused"}
	}
	sent := c.Request().Header.Get(csrfHeader)
	if sent == "" {
		sent = c.FormValue(csrfField)
	}
	want := csrfToken(c)
	if sent == "" || want == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(want)) != 1 {
		return errCSRF
	}
	return nil
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// csrfToken is the token forms of this request carry: the session's, or for
// an anonymous visitor the fd_csrf cookie's random value (set when missing).
func csrfToken(c echo.Context) string {
	if t, ok := c.Get(ctxCSRF).(string); ok {
		return t
	}
	var t string
	if secret, ok := c.Get(ctxSessionSecret).(string); ok {
		t = auth.CSRFToken(secret)
	} else if ck, err := c.Cookie(csrfCookie); err == nil && auth.WellFormedSecret(ck.Value) {
		t = ck.Value
	} else if !c.Response().Committed {
		t, _ = auth.NewSecret("")
		setCookie(c, csrfCookie, t, 0)
	}
	c.Set(ctxCSRF, t)
	return t
}
