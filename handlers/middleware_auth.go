package handlers

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/store"
)

const (
	ctxUser          = "user"
	ctxCredential    = "credential"
	ctxSessionSecret = "session_secret"
	sessionCookie    = "fd_session"
)

func userOf(c echo.Context) *auth.User {
	u, _ := c.Get(ctxUser).(*auth.User)
	return u
}

// credential is what authenticated a request: an API token or a session,
// by hash. A socket outlives its upgrade request, so it looks the
// credential up again (per message and periodically) to learn when it ends.
type credential struct {
	session bool
	hash    []byte
}

func credentialOf(c echo.Context) (credential, bool) {
	cr, ok := c.Get(ctxCredential).(credential)
	return cr, ok
}

// user looks the credential up: the user with their teams and roles as
// they are now, or store.ErrNotFound once the token is revoked or the
// session ended (logout, expiry).
func (h *Handler) credentialUser(ctx context.Context, cr credential) (*auth.User, error) {
	if cr.session {
		return h.store.SessionUser(ctx, cr.hash)
	}
	return h.store.TokenUser(ctx, cr.hash)
}

// authenticate identifies the caller by bearer token or session cookie. A
// bad bearer token is refused outright (a script should learn at once that
// its token is wrong or revoked); a stale cookie just means "signed out".
func (h *Handler) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		// Sockets and streams outlive this lookup: bound it on its own.
		ctx, cancel := context.WithTimeout(c.Request().Context(), h.requestTimeout())
		defer cancel()
		if authz := c.Request().Header.Get("Authorization"); authz != "" {
			addr := clientAddress(c)
			scheme, token, ok := strings.Cut(authz, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
				return h.badToken(addr, "")
			}
			cr := credential{hash: auth.HashSecret(strings.TrimSpace(token))}
			key := hex.EncodeToString(cr.hash)
			// A token that just failed is refused again without a lookup.
			if ok, wait := h.badTokenHashes.Peek(key); !ok {
				return tooManyBadTokens(wait)
			}
			u, err := h.credentialUser(ctx, cr)
			if errors.Is(err, store.ErrNotFound) {
				return h.badToken(addr, key)
			}
			if err != nil {
				return err
			}
			// A valid token always gets through: the address's budget
			// counts failures only, so a guesser behind the same proxy
			// locks out nobody else.
			c.Set(ctxUser, u)
			c.Set(ctxCredential, cr)
			return next(c)
		}
		if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
			cr := credential{session: true, hash: auth.HashSecret(ck.Value)}
			u, err := h.credentialUser(ctx, cr)
			switch {
			case err == nil:
				c.Set(ctxUser, u)
				c.Set(ctxCredential, cr)
				c.Set(ctxSessionSecret, ck.Value)
			case errors.Is(err, store.ErrNotFound):
				clearCookie(c, sessionCookie)
			default:
				return err
			}
		}
		return next(c)
	}
}

// badToken spends a failure of the client address (and of the token's
// hash, when there is one): 401 while the address has budget left, then
// 429 until it refills.
func (h *Handler) badToken(addr, hash string) error {
	if hash != "" {
		h.badTokenHashes.Allow(hash)
	}
	if ok, wait := h.badTokens.Allow(addr); !ok {
		return tooManyBadTokens(wait)
	}
	return errUnauthenticated
}

func tooManyBadTokens(wait time.Duration) error {
	return &APIError{Status: http.StatusTooManyRequests, Code: "rate_limited",
		Message: "too many invalid tokens; slow down", RetryAfter: max(1, int(wait.Seconds()+0.999))}
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

// setCookie sets a cookie, Secure when the browser came over HTTPS: to this
// server, or to a TLS proxy saying so in X-Forwarded-Proto. A client that
// forges the header only keeps the cookie from itself over plain HTTP.
func setCookie(c echo.Context, name, value string, maxAge int) {
	c.SetCookie(&http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.Scheme() == "https",
	})
}

func clearCookie(c echo.Context, name string) { setCookie(c, name, "", -1) }

// safeNext keeps post-login redirects on this site: an absolute path of
// printable ASCII, with no backslash (browsers read it as a slash) and no
// whitespace or control characters (browsers drop tabs and newlines, so
// "/\t/evil.example" would become "//evil.example"), not starting with
// "//"; percent-decoded it must still be such a path (no control character,
// no backslash, no leading "//"), in case something on the way decodes it.
// Anything else goes to the task list.
func safeNext(next string) string {
	const fallback = "/tasks"
	if len(next) > 2048 || !pathStart(next) {
		return fallback
	}
	for i := 0; i < len(next); i++ {
		if b := next[i]; b <= ' ' || b >= 0x7f || b == '\\' {
			return fallback
		}
	}
	decoded, err := url.PathUnescape(next)
	if err != nil || !pathStart(decoded) || strings.ContainsFunc(decoded, func(r rune) bool { return r == '\\' || unicode.IsControl(r) }) {
		return fallback
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return fallback
	}
	return next
}

// pathStart: p starts with one slash, not "//" or "/\\".
func pathStart(p string) bool {
	return len(p) > 0 && p[0] == '/' && (len(p) == 1 || p[1] != '/' && p[1] != '\\')
}
