package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/store"
)

// loginLink signs in with a one-time link (printed by FLIGHTDECK_DEV=1).
// A GET that creates a session is acceptable here: the link is a bearer
// secret used once, and it only signs in the person holding it.
func (h *Handler) loginLink(c echo.Context) error {
	userID, err := h.store.LoginLinkUse(c.Request().Context(), auth.HashSecret(c.Param("token")))
	if errors.Is(err, store.ErrNotFound) {
		return &APIError{Status: http.StatusNotFound, Code: "not_found", Message: "This login link is unknown, used or expired. Sign in with your password."}
	}
	if err != nil {
		return err
	}
	if err := h.startSession(c, userID); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/tasks")
}
