package handlers

import (
	"net/http"
	"sort"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/workflow/environment"
)

// freezeHorizon is how far ahead recurring windows are listed.
const freezeHorizon = 7 * 24 * time.Hour

func (h *Handler) apiFreezeList(c echo.Context) error {
	out, err := h.freezes(c, time.Now())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"freezes": out})
}

// freezes are the caller's teams' active and upcoming freezes through the
// API and the recurring windows of the next 7 days, by start.
func (h *Handler) freezes(c echo.Context, now time.Time) ([]freezeJSON, error) {
	fs, err := h.store.FreezeList(c.Request().Context(), userOf(c).TeamIDs(), "", now)
	if err != nil {
		return nil, err
	}
	out := []freezeJSON{}
	for i := range fs {
		out = append(out, apiFreeze(&fs[i]))
	}
	for _, e := range h.pipelines.Environments().All() {
		for _, s := range (&environment.Env{Freeze: e.Freeze}).Freezes(nil, now, now.Add(freezeHorizon)) {
			out = append(out, freezeJSON{Environment: e.Name, From: s.From, Until: s.Until, Reason: s.Reason, Source: "rule"})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].From.Before(out[j].From) })
	return out, nil
}
