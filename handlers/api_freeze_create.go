package handlers

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

type freezeCreateRequest struct {
	Environment string     `json:"environment"`
	Until       *time.Time `json:"until"`
	Reason      string     `json:"reason"`
	Team        string     `json:"team"`
}

// freezeJSON is a freeze as the API shows it (contract §9).
type freezeJSON struct {
	ID          *string   `json:"id"`
	Environment string    `json:"environment"`
	From        time.Time `json:"from"`
	Until       time.Time `json:"until"`
	Reason      string    `json:"reason"`
	CreatedBy   *string   `json:"created_by"`
	Source      string    `json:"source"` // api | rule
	teamID      string
}

func apiFreeze(f *store.Freeze) freezeJSON {
	return freezeJSON{ID: &f.ID, Environment: f.Environment, From: f.From, Until: f.Until, Reason: f.Reason, CreatedBy: &f.CreatedBy, Source: "api", teamID: f.TeamID}
}

var freezeEnvName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// unknownEnvironment says why env cannot be frozen ("" when it can): a
// freeze of a name no deploy can go to protects nothing (contract §9), so
// the message names the environments there are.
func (h *Handler) unknownEnvironment(env string) string {
	ok, known := h.pipelines.EnvironmentKnown(env)
	switch {
	case freezeEnvName.MatchString(env) && ok:
		return ""
	case len(known) == 0:
		return "no pipeline deploys to an environment named " + strconv.Quote(env)
	case env == "":
		return "name the environment to freeze: one of " + strings.Join(known, ", ")
	}
	return fmt.Sprintf("no deploy can go to an environment named %q: the environments are %s", env, strings.Join(known, ", "))
}

func (h *Handler) apiFreezeCreate(c echo.Context) error {
	u := userOf(c)
	var req freezeCreateRequest
	if _, err := readJSON(c, &req); err != nil {
		return err
	}
	team, err := adminTeam(u, req.Team, task.ActManageFreezes)
	if err != nil {
		return err
	}
	if why := h.unknownEnvironment(req.Environment); why != "" {
		return errInvalid("environment", "%s", why)
	}
	reason, err := personText("reason", req.Reason, 1)
	if err != nil {
		return err
	}
	if req.Until == nil {
		return errInvalid("until", "until is required: when the freeze ends (RFC 3339)")
	}
	if req.Until.Before(time.Now()) || req.Until.Sub(time.Now()) > 366*24*time.Hour {
		return errInvalid("until", "until must be in the future, at most a year ahead")
	}
	f, err := h.store.FreezeCreate(c.Request().Context(), store.FreezeCreateParams{TeamID: team.TeamID, Environment: req.Environment,
		Until: *req.Until, Reason: reason, Actor: u.Email})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, apiFreeze(f))
}
