package handlers

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/internal/sso"
	"flightdeck/store"
	"flightdeck/views/pages"
)

// oidcProviderTimeout bounds the calls to the provider (code exchange,
// keys); the request's database deadline does not apply to them.
const oidcProviderTimeout = 20 * time.Second

// loginOIDCCallback is where the provider sends the browser back. A GET
// from another site, so no CSRF token: the state must match the one in this
// browser's cookie, and the code is redeemed with this browser's PKCE
// verifier. A verified email that matches a user signs them in; an unknown
// one joins FLIGHTDECK_OIDC_AUTO_JOIN's team, or is refused.
func (h *Handler) loginOIDCCallback(c echo.Context) error {
	if h.sso == nil {
		return errNotFound
	}
	login, ok := h.takeOIDCLogin(c)
	q := c.QueryParams()
	switch {
	case q.Get("error") != "":
		return h.refuseSignIn(c, http.StatusForbidden, "provider_error",
			fmt.Sprintf("The identity provider did not sign you in (%s).", clip(q.Get("error"), 80)))
	case !ok:
		return h.refuseSignIn(c, http.StatusBadRequest, "no_login",
			"This sign-in was not started in this browser, or took longer than 10 minutes. Start again.")
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(login.State)) != 1:
		return h.refuseSignIn(c, http.StatusBadRequest, "state_mismatch",
			"This answer from the identity provider does not belong to the sign-in this browser started. Start again.")
	case q.Get("code") == "":
		return h.refuseSignIn(c, http.StatusBadRequest, "no_code", "The identity provider sent no authorization code. Start again.")
	}

	pctx, cancel := context.WithTimeout(streamContext(c), oidcProviderTimeout)
	defer cancel()
	email, err := h.sso.Identify(pctx, q.Get("code"), login.Secrets)
	if err != nil {
		status, msg := ssoRefusal(err, email)
		return h.refuseSignIn(c, status, err.Error(), msg)
	}
	email = auth.NormalizeEmail(email)
	if !auth.ValidEmail(email) {
		return h.refuseSignIn(c, http.StatusForbidden, "invalid_email",
			fmt.Sprintf("The identity provider's email %q is not one flightdeck can use.", clip(email, 254)))
	}

	ctx := c.Request().Context()
	u, _, err := h.store.UserGetByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		if h.cfg.OIDC.AutoJoinTeam == "" {
			return h.refuseSignIn(c, http.StatusForbidden, "unknown_email",
				fmt.Sprintf("There is no flightdeck account for %s. Ask a team admin to add you, then sign in again.", email))
		}
		u, err = h.autoJoin(c, email)
	}
	if err != nil {
		return err
	}
	if err := h.startSession(c, u.ID); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, login.Next)
}

// autoJoin makes the account of a person with a verified email and none
// yet (FLIGHTDECK_OIDC_AUTO_JOIN). One that appeared meanwhile is used as
// it is.
func (h *Handler) autoJoin(c echo.Context, email string) (*auth.User, error) {
	ctx := c.Request().Context()
	_, err := h.store.UserAutoJoin(ctx, email, h.cfg.OIDC.AutoJoinTeam, h.cfg.OIDC.AutoJoinRole)
	if err == nil {
		requestLogger(c, h.logger).Info("Single sign-on joined a new user", "email", email,
			"team", h.cfg.OIDC.AutoJoinTeam, "role", h.cfg.OIDC.AutoJoinRole)
	} else if !errors.Is(err, store.ErrConflict) {
		return nil, err
	}
	u, _, err := h.store.UserGetByEmail(ctx, email)
	return u, err
}

// ssoRefusal says why the provider's answer was not good enough.
func ssoRefusal(err error, email string) (int, string) {
	switch {
	case errors.Is(err, sso.ErrUnverified) && email == "":
		return http.StatusForbidden, "The identity provider did not send an email address."
	case errors.Is(err, sso.ErrUnverified):
		return http.StatusForbidden, fmt.Sprintf("The identity provider has not verified the email address %s. Verify it there, then sign in again.", clip(email, 254))
	case errors.Is(err, sso.ErrExpired):
		return http.StatusUnauthorized, "The identity provider's ID token has expired. Start again (and check the clocks if this repeats)."
	case errors.Is(err, sso.ErrNonce):
		return http.StatusUnauthorized, "The identity provider's ID token was not issued for this sign-in. Start again."
	case errors.Is(err, sso.ErrCodeRefused):
		return http.StatusUnauthorized, "The identity provider refused this sign-in's code. Start again."
	case errors.Is(err, sso.ErrUnreachable):
		return http.StatusBadGateway, "The identity provider did not answer. Try again shortly."
	}
	return http.StatusUnauthorized, "The identity provider's ID token could not be verified."
}

// refuseSignIn answers a failed single sign-on with a page that says why.
func (h *Handler) refuseSignIn(c echo.Context, status int, reason, msg string) error {
	requestLogger(c, h.logger).Warn("Single sign-on refused", "status", status, "reason", reason)
	return h.render(c, status, "Sign-in refused", "", pages.Error(pages.ErrorProps{
		Status: status, Title: "Sign-in refused", Message: msg, RequestID: requestID(c),
		Back: "/login", BackLabel: "Back to sign in",
	}))
}

func clip(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}
