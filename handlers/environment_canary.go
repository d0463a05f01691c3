package handlers

import (
	"errors"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/views/components"
	"flightdeck/workflow/action/local"
)

// environmentCanary is the environments page's poll of a route's canary
// share (GET /environments/canary?host=app.env): the fragment that
// replaces itself, empty while the route has no canary. A route of
// another team, or none, reads as no canary.
func (h *Handler) environmentCanary(c echo.Context) error {
	host := local.RouteHost(c.QueryParam("host"))
	if host == "" {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, "host: want a route such as shop.staging")
	}
	ctx := c.Request().Context()
	version, weight := "", 0
	r, err := h.store.LocalRouteGet(ctx, host)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	case r.CanaryID != "" && slices.Contains(userOf(c).TeamIDs(), r.TeamID):
		inst, err := h.store.LocalInstanceGet(ctx, r.CanaryID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if inst != nil && inst.State == "running" {
			version, weight = inst.Version, r.CanaryWeight
		}
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return components.CanaryPoll(host, version, weight, true).Render(ctx, c.Response())
}
