package handlers

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/sso"
)

const (
	oidcCookie = "fd_oidc"
	// oidcCookieMaxAge is how long a person may take at the provider.
	oidcCookieMaxAge = 600
)

// oidcLogin is what the browser keeps between the start of a sign-in and
// the provider's answer: the secrets the answer must match, and where to
// go afterwards.
type oidcLogin struct {
	sso.Secrets
	Next string `json:"next"`
}

// loginOIDC starts single sign-on: the sign-in's state, nonce and PKCE
// verifier go into a short-lived HttpOnly cookie, which binds the answer
// to this browser, and the browser goes to the provider.
func (h *Handler) loginOIDC(c echo.Context) error {
	if h.sso == nil {
		return errNotFound
	}
	next := safeNext(c.QueryParam("next"))
	if userOf(c) != nil {
		return c.Redirect(http.StatusSeeOther, next)
	}
	login := oidcLogin{Secrets: sso.NewSecrets(), Next: next}
	b, err := json.Marshal(login)
	if err != nil {
		return err
	}
	h.setOIDCCookie(c, base64.RawURLEncoding.EncodeToString(b), oidcCookieMaxAge)
	return c.Redirect(http.StatusSeeOther, h.sso.AuthURL(login.Secrets))
}

// setOIDCCookie: only the callback reads it; Lax still sends it on the
// provider's top-level redirect back. Secure when people reach the server
// over https, also behind a TLS-terminating proxy.
func (h *Handler) setOIDCCookie(c echo.Context, value string, maxAge int) {
	c.SetCookie(&http.Cookie{
		Name: oidcCookie, Value: value, Path: "/login/oidc", MaxAge: maxAge, HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: c.Request().TLS != nil || strings.HasPrefix(h.cfg.PublicURL(), "https://"),
	})
}

// takeOIDCLogin reads the sign-in the browser started and ends it: each
// answer is used once.
func (h *Handler) takeOIDCLogin(c echo.Context) (oidcLogin, bool) {
	var login oidcLogin
	ck, err := c.Cookie(oidcCookie)
	if err != nil {
		return login, false
	}
	h.setOIDCCookie(c, "", -1)
	b, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || json.Unmarshal(b, &login) != nil || login.State == "" || login.Nonce == "" || login.Verifier == "" {
		return login, false
	}
	login.Next = safeNext(login.Next)
	return login, true
}
