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
	Target      []string         `json:"target"`
	Concurrency *concurrencyJSON `json:"concurrency"`
}

type concurrencyJSON struct {
	Key    string `json:"key"`
	Policy string `json:"policy"`
}

func (h *Handler) apiPipelineList(c echo.Context) error {
	all := h.pipelines.All()
	out := make([]pipelineJSON, len(all))
	for i, p := range all {
		params := p.Params
		if params == nil {
			params = []pipeline.Param{}
		}
		out[i] = pipelineJSON{Name: p.Name, Description: p.Description, Params: params, Steps: p.StepNames(), Target: p.TargetParams()}
		if key := p.KeyTemplate(); key != "" {
			out[i].Concurrency = &concurrencyJSON{Key: key, Policy: p.ConcurrencyPolicy()}
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"pipelines": out})
}
