package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
)

func (h *Handler) apiFreezeDelete(c echo.Context) error {
	u := userOf(c)
	// Another team's freeze does not exist for the caller; a team's freeze
	// a non-admin sees is refused.
	f, err := h.store.FreezeEnd(c.Request().Context(), teamIDsAtLeast(u, auth.RoleAdmin), c.Param("id"), u.Email)
	if err != nil {
		return h.freezeEndError(c, err)
	}
	return c.JSON(http.StatusOK, apiFreeze(f))
}
