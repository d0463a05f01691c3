package handlers

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
)

func (h *Handler) pipelineList(c echo.Context) error {
	var rows []pages.PipelineRow
	for _, p := range h.pipelines.All() {
		row := pages.PipelineRow{Name: p.Name, Description: p.Description, Steps: p.StepNames(), Approvals: approvalNotes(p)}
		for _, prm := range p.Params {
			desc := prm.Describe()
			if prm.Default != nil {
				desc += fmt.Sprintf(" (default %v)", prm.Default)
			}
			row.Params = append(row.Params, pages.PipelineParam{Name: prm.Name, Description: desc, Pattern: prm.Pattern,
				Required: prm.Required, Secret: prm.Secret})
		}
		rows = append(rows, row)
	}
	return h.render(c, http.StatusOK, "Pipelines", "pipelines", pages.PipelineList(pages.PipelineListProps{Pipelines: rows}))
}
