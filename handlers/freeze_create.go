package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

// freezeCreate is the environments page's "Freeze an environment" form (admins).
func (h *Handler) freezeCreate(c echo.Context) error {
	u := userOf(c)
	team, err := adminTeam(u, c.FormValue("team"), task.ActManageFreezes)
	if err != nil {
		return h.renderEnvironments(c, toAPIError(err).Status, "Only an admin may freeze an environment.")
	}
	env := strings.TrimSpace(c.FormValue("environment"))
	reason, rerr := personText("reason", c.FormValue("reason"), 1)
	minutes, err := strconv.Atoi(c.FormValue("minutes"))
	switch {
	case h.unknownEnvironment(env) != "":
		why := h.unknownEnvironment(env)
		return h.renderEnvironments(c, http.StatusUnprocessableEntity, strings.ToUpper(why[:1])+why[1:]+".")
	case err != nil || minutes < 1 || minutes > 366*24*60:
		return h.renderEnvironments(c, http.StatusUnprocessableEntity, "A freeze lasts from a minute to a year.")
	case rerr != nil:
		return h.renderEnvironments(c, http.StatusUnprocessableEntity, "Say why the environment is frozen (at most 4096 bytes).")
	}
	if _, err := h.store.FreezeCreate(c.Request().Context(), store.FreezeCreateParams{TeamID: team.TeamID, Environment: env,
		Until: time.Now().Add(time.Duration(minutes) * time.Minute), Reason: reason, Actor: u.Email}); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/environments")
}
