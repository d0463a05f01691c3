package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/store"
)

const (
	ctxUser       = "user"
	ctxViaToken   = "via_token"
	sessionCookie = "fd_session"
)

func userOf(c echo.Context) *auth.User {
	u, _ := c.Get(ctxUser).(*auth.User)
	return u
}

// authenticate identifies the caller by bearer token or session cookie. A
// bad bearer token is refused outright (a script should learn at once that
// its token is wrong or revoked); a stale cookie just means "signed out".
func (h *Handler) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		if authz := c.Request().Header.Get("Authorization"); authz != "" {
			scheme, token, ok := strings.Cut(authz, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
				return errUnauthenticated
			}
			u, err := h.store.TokenUser(ctx, auth.HashSecret(strings.TrimSpace(token)))
			if errors.Is(err, store.ErrNotFound) {
				return errUnauthenticated
			}
			if err != nil {
				return err
			}
			c.Set(ctxUser, u)
			c.Set(ctxViaToken, true)
			return next(c)
		}
		if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
			u, err := h.store.SessionUser(ctx, auth.HashSecret(ck.Value))
			switch {
			case err == nil:
				c.Set(ctxUser, u)
			case errors.Is(err, store.ErrNotFound):
				clearCookie(c, sessionCookie)
			default:
				return err
			}
		}
		return next(c)
	}
}

// requireAPIUser answers 401 JSON without a caller.
func (h *Handler) requireAPIUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if userOf(c) == nil {
			return errUnauthenticated
		}
		return next(c)
	}
}

// requirePageUser sends anonymous browsers to the login page and back.
func (h *Handler) requirePageUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if userOf(c) != nil {
			return next(c)
		}
		target := "/login?next=" + url.QueryEscape(c.Request().URL.RequestURI())
		if isHTMX(c) {
			c.Response().Header().Set("HX-Redirect", target)
			return c.NoContent(http.StatusUnauthorized)
		}
		return c.Redirect(http.StatusSeeOther, target)
	}
}

// rateLimit bounds API requests per user (contract: 429 rate_limited).
func (h *Handler) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := userOf(c)
		if u == nil {
			return next(c)
		}
		if ok, wait := h.apiRate.Allow(u.ID); !ok {
			return &APIError{Status: http.StatusTooManyRequests, Code: "rate_limited",
				Message: "too many requests; slow down", RetryAfter: max(1, int(wait.Seconds()+0.999))}
		}
		return next(c)
	}
}

func setCookie(c echo.Context, name, value string, maxAge int) {
	c.SetCookie(&http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.Request().TLS != nil,
	})
}

func clearCookie(c echo.Context, name string) { setCookie(c, name, "", -1) }

// safeNext keeps post-login redirects on this site: only absolute paths,
// never "//host" or a scheme.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/tasks"
	}
	return next
}
