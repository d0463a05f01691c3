package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
)

func (h *Handler) logout(c echo.Context) error {
	if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
		if err := h.store.SessionDelete(c.Request().Context(), auth.HashSecret(ck.Value)); err != nil {
			return err
		}
	}
	clearCookie(c, sessionCookie)
	if isHTMX(c) {
		c.Response().Header().Set("HX-Redirect", "/login")
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}
