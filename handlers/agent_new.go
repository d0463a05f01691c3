package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
)

// agentNew shows the agent form, or how to configure an LLM.
func (h *Handler) agentNew(c echo.Context) error {
	return h.render(c, http.StatusOK, "Ask the ops agent", "tasks", pages.AgentNew(pages.AgentNewProps{
		CSRFToken: csrfToken(c), Enabled: h.cfg.AgentsEnabled()}))
}
