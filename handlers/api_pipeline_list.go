package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/workflow/pipeline"
)

type pipelineJSON struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Params      []pipeline.Param `json:"params"`
	Steps       []string         `json:"steps"`
}

func (h *Handler) apiPipelineList(c echo.Context) error {
	all := h.pipelines.All()
	out := make([]pipelineJSON, len(all))
	for i, p := range all {
		params := p.Params
		if params == nil {
			params = []pipeline.Param{}
		}
		out[i] = pipelineJSON{Name: p.Name, Description: p.Description, Params: params, Steps: p.StepNames()}
	}
	return c.JSON(http.StatusOK, map[string]any{"pipelines": out})
}
