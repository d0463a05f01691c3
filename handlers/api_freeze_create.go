package handlers

import (
	"net/http"
	"regexp"
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
	if !freezeEnvName.MatchString(req.Environment) {
		return errInvalid("environment", "environment must name an environment (letters, digits, . _ -)")
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
