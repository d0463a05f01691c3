package handlers

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
)

// environmentJSON is one entry of GET /api/v1/environments (contract §3).
type environmentJSON struct {
	Team     string           `json:"team"`
	Pipeline string           `json:"pipeline"`
	Target   json.RawMessage  `json:"target"`
	Current  *store.Deployed  `json:"current"`
	Previous *store.Deployed  `json:"previous"`
	Running  *string          `json:"running"`
	Waiting  int              `json:"waiting"`
	History  []store.Deployed `json:"history,omitempty"`
}

// maxHistory bounds ?history=N, the completed deploys listed per target.
const maxHistory = 50

func (h *Handler) apiEnvironmentList(c echo.Context) error {
	p := store.EnvironmentListParams{TeamIDs: userOf(c).TeamIDs(), Pipeline: c.QueryParam("pipeline")}
	if err := checkText("pipeline", p.Pipeline); err != nil {
		return err
	}
	if v := c.QueryParam("history"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxHistory {
			return errInvalid("history", "history must be between 0 and %d", maxHistory)
		}
		p.History = n
	}
	envs, err := h.store.EnvironmentList(c.Request().Context(), p)
	if err != nil {
		return err
	}
	out := make([]environmentJSON, len(envs))
	for i, e := range envs {
		out[i] = environmentJSON{Team: e.Team, Pipeline: e.Pipeline, Target: json.RawMessage(e.TargetKey),
			Current: e.Current, Previous: e.Previous, Running: e.Running, Waiting: e.Waiting, History: e.History}
	}
	return c.JSON(http.StatusOK, map[string]any{"environments": out})
}
