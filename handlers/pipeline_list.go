package handlers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
)

func (h *Handler) pipelineList(c echo.Context) error {
	var rows []pages.PipelineRow
	for _, p := range h.pipelines.All() {
		row := pages.PipelineRow{Name: p.Name, Description: p.Description, Steps: p.StepNames()}
		for _, prm := range p.Params {
			desc := prm.Type
			switch {
			case prm.Type == "enum":
				desc = "one of " + strings.Join(prm.Values, ", ")
			case prm.Pattern != "":
				desc += " matching " + prm.Pattern
			}
			if prm.Default != nil {
				desc += fmt.Sprintf(" (default %v)", prm.Default)
			}
			row.Params = append(row.Params, pages.PipelineParam{Name: prm.Name, Description: desc, Required: prm.Required, Secret: prm.Secret})
		}
		rows = append(rows, row)
	}
	return h.render(c, http.StatusOK, "Pipelines", "pipelines", pages.PipelineList(pages.PipelineListProps{Pipelines: rows}))
}
