package handlers

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/store"
	"flightdeck/views/pages"
)

func (h *Handler) loginSubmit(c echo.Context) error {
	ctx := c.Request().Context()
	email := auth.NormalizeEmail(c.FormValue("email"))
	password := c.FormValue("password")
	next := safeNext(c.FormValue("next"))

	addr := clientAddress(c)
	// A throttled account is refused before its password is looked at. A
	// throttled address still lets a correct password through (everyone
	// behind one NAT is not locked out by one guesser there); its failures
	// keep being refused as throttled and still count against the account.
	if ok, wait := h.loginAccount.Peek(email); !ok {
		return h.loginRefused(c, email, addr, next, wait)
	}
	addrOK, addrWait := h.loginAddress.Peek(addr)

	u, hash, err := h.store.UserGetByEmail(ctx, email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if u == nil {
		auth.DummyCheck(password) // same timing as a wrong password
	}
	if u == nil || !auth.CheckPassword(hash, password) {
		h.loginAccount.Allow(email)
		if !addrOK {
			return h.loginRefused(c, email, addr, next, addrWait)
		}
		h.loginAddress.Allow(addr)
		requestLogger(c, h.logger).Warn("Login failed", "email", email, "address", addr)
		return h.render(c, http.StatusUnauthorized, "Sign in", "", pages.Login(pages.LoginProps{
			Email: email, Error: "Wrong email or password.", CSRFToken: csrfToken(c), Next: next, SSO: h.sso != nil,
		}))
	}
	if err := h.startSession(c, u.ID); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, next)
}

// startSession stores a new session and sets its cookie. A fresh id at each
// login prevents session fixation.
func (h *Handler) startSession(c echo.Context, userID string) error {
	secret, hash := auth.NewSecret("")
	if err := h.store.SessionCreate(c.Request().Context(), hash, userID, h.cfg.SessionTTL); err != nil {
		return err
	}
	setCookie(c, sessionCookie, secret, int(h.cfg.SessionTTL.Seconds()))
	// From here forms carry the new session's token; the anonymous one is done.
	clearCookie(c, csrfCookie)
	return nil
}

// loginRefused answers a throttled sign-in (contract section 8): 429 with
// Retry-After. Only failures spend the allowances, so a person who types
// the right password is never held up by their own successes.
func (h *Handler) loginRefused(c echo.Context, email, addr, next string, wait time.Duration) error {
	secs := max(1, int(wait.Seconds()+0.999))
	requestLogger(c, h.logger).Warn("Login throttled", "email", email, "address", addr)
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return h.render(c, http.StatusTooManyRequests, "Sign in", "", pages.Login(pages.LoginProps{
		Email: email, CSRFToken: csrfToken(c), Next: next, SSO: h.sso != nil,
		Error: fmt.Sprintf("Too many failed sign-ins. Try again in %s.", retryText(secs)),
	}))
}

// clientAddress keys per-address limits: the connection's peer (never a
// client-supplied X-Forwarded-For), an IPv6 client by its /64, which one
// host usually owns whole.
func clientAddress(c echo.Context) string {
	ip := net.ParseIP(c.RealIP())
	if ip == nil {
		return c.RealIP()
	}
	if ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return ip.String()
}

func retryText(secs int) string {
	if secs < 90 {
		return fmt.Sprintf("%d seconds", secs)
	}
	return fmt.Sprintf("%d minutes", (secs+59)/60)
}
