package handlers

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/tracing"
	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// agentCreate starts an agent task from the form, validated like the API.
func (h *Handler) agentCreate(c echo.Context) error {
	prompt := c.FormValue("prompt")
	rerender := func(err error) error {
		e := toAPIError(err)
		return h.render(c, e.Status, "Ask the ops agent", "tasks", pages.AgentNew(pages.AgentNewProps{
			CSRFToken: csrfToken(c), Enabled: h.cfg.AgentsEnabled(), Prompt: prompt, Error: e.Message}))
	}
	t, err := h.submitAgent(c, prompt)
	if err != nil {
		return rerender(err)
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/tasks/%s", t.ID))
}

// submitAgent submits an agent task for the user, as the API would.
func (h *Handler) submitAgent(c echo.Context, prompt string) (*task.Task, error) {
	u := userOf(c)
	team, err := deployTeam(u, c.FormValue("team"))
	if err != nil {
		return nil, err
	}
	req := taskCreateRequest{Kind: string(task.KindAgent), Prompt: prompt}
	p := store.TaskInsertParams{TeamID: team.TeamID, CreatedByID: u.ID, MaxPending: h.cfg.MaxPending,
		Traceparent: tracing.Traceparent(c.Request().Context())}
	sub := saga.Submission{Insert: p}
	if err := h.validateTaskCreate(c.Request().Context(), &req, team.Team, &sub); err != nil {
		return nil, err
	}
	t, _, err := h.submit(c.Request().Context(), u, sub)
	return t, err
}
