package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

type teamJSON struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

// apiMe tells a client who it is signed in as (CLI sanity check).
func (h *Handler) apiMe(c echo.Context) error {
	u := userOf(c)
	teams := make([]teamJSON, 0, len(u.Memberships))
	for _, m := range u.Memberships {
		teams = append(teams, teamJSON{Name: m.Team, Role: string(m.Role)})
	}
	return c.JSON(http.StatusOK, map[string]any{"id": u.ID, "email": u.Email, "teams": teams})
}
