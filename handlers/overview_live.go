package handlers

import (
	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
)

// overviewLive is the overview's live part (GET /overview/live), fetched
// by the page when its socket says something changed in the team.
func (h *Handler) overviewLive(c echo.Context) error {
	p, err := h.loadOverview(c.Request().Context(), userOf(c))
	if err != nil {
		return err
	}
	p.CSRFToken = csrfToken(c)
	c.Response().Header().Set("Cache-Control", "no-store")
	return pages.OverviewLive(p).Render(c.Request().Context(), c.Response())
}
