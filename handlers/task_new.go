package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
	"flightdeck/workflow/pipeline"
)

// taskNew shows the submit form generated from a pipeline's parameters.
func (h *Handler) taskNew(c echo.Context) error {
	name := c.QueryParam("pipeline")
	if name == "" {
		name = "web-service"
	}
	p, ok := h.pipelines.Get(name)
	if !ok {
		return errNotFound
	}
	return h.render(c, http.StatusOK, "Submit "+p.Name, "tasks", pages.TaskNew(h.taskNewProps(c, p, nil, nil, "")))
}

func (h *Handler) taskNewProps(c echo.Context, p *pipeline.Pipeline, values map[string]string, errs map[string]string, flash string) pages.TaskNewProps {
	props := pages.TaskNewProps{Pipeline: p.Name, Description: p.Description, CSRFToken: csrfToken(c), Error: flash, Priority: "normal"}
	for _, pl := range h.pipelines.All() {
		props.Pipelines = append(props.Pipelines, pl.Name)
	}
	for _, prm := range p.Params {
		f := pages.FormField{Name: prm.Name, Type: prm.Type, Options: prm.Values, Required: prm.Required, Secret: prm.Secret, Pattern: prm.Pattern, Min: prm.Min, Max: prm.Max}
		if prm.Default != nil {
			f.Value = toString(prm.Default)
		}
		if v, ok := values[prm.Name]; ok {
			f.Value = v
		}
		f.Error = errs[prm.Name]
		props.Fields = append(props.Fields, f)
	}
	if v := values["priority"]; v != "" {
		props.Priority = v
	}
	return props
}
