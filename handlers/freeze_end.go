package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
)

// freezeEnd is the environments page's "End now" on a freeze (admins).
func (h *Handler) freezeEnd(c echo.Context) error {
	u := userOf(c)
	if _, err := h.store.FreezeEnd(c.Request().Context(), teamIDsAtLeast(u, auth.RoleAdmin), c.Param("id"), u.Email); err != nil {
		if ae := toAPIError(h.freezeEndError(c, err)); ae.Status < 500 {
			return h.renderEnvironments(c, ae.Status, "The freeze was not ended: "+ae.Message)
		}
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/environments")
}
