package handlers

import (
	"errors"
	"net/http"

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

	u, hash, err := h.store.UserGetByEmail(ctx, email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if u == nil {
		auth.DummyCheck(password) // same timing as a wrong password
	}
	if u == nil || !auth.CheckPassword(hash, password) {
		requestLogger(c, h.logger).Warn("Login failed", "email", email)
		return h.render(c, http.StatusUnauthorized, "Sign in", "", pages.Login(pages.LoginProps{
			Email: email, Error: "Wrong email or password.", CSRFToken: csrfToken(c), Next: next,
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
