package handlers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// taskNew shows the submit form generated from a pipeline's parameters.
func (h *Handler) taskNew(c echo.Context) error {
	name := c.QueryParam("pipeline")
	if name == "" {
		name = "web-service"
	}
	p, ok := h.pipelines.Get(name)
	if !ok {
		return notFoundPage("No such pipeline", fmt.Sprintf("There is no pipeline named %q.", name), "/pipelines", "See every pipeline")
	}
	return h.render(c, http.StatusOK, "Submit "+p.Name, "tasks", pages.TaskNew(h.taskNewProps(c, p, nil, nil, "")))
}

func (h *Handler) taskNewProps(c echo.Context, p *pipeline.Pipeline, values map[string]string, errs map[string]string, flash string) pages.TaskNewProps {
	props := pages.TaskNewProps{Pipeline: p.Name, Description: p.Description, CSRFToken: csrfToken(c), Error: flash, Priority: "normal",
		Approvals: approvalNotes(p)}
	for _, pl := range h.pipelines.All() {
		props.Pipelines = append(props.Pipelines, pl.Name)
	}
	focused := false
	for _, prm := range p.Params {
		f := pages.FormField{Name: prm.Name, Type: prm.Type, Options: prm.Values, Required: prm.Required, Secret: prm.Secret,
			Hint: prm.Describe(), Pattern: prm.HTMLPattern(), MaxLength: prm.MaxLen(), Min: prm.Min, Max: prm.Max}
		if prm.Type == "list" && !strings.Contains(f.Hint, "per line") {
			f.Hint += ", one per line or comma-separated" // an author's hint says what an item is
		}
		if prm.Default != nil {
			f.Value = formValue(prm, prm.Default)
		}
		if v, ok := values[prm.Name]; ok {
			f.Value = v
		}
		f.Error = errs[prm.Name]
		if f.Error != "" && strings.Contains(f.Error, f.Hint) {
			f.Hint = "" // the error says it already
		}
		if f.Error != "" && !focused {
			f.Focus, focused = true, true
		}
		props.Fields = append(props.Fields, f)
	}
	if v := values["priority"]; v != "" {
		props.Priority = v
	}
	props.RunAt = values["run_at"]
	props.CanOverride = len(userOf(c).TeamsWhereMay(task.ActOverride)) > 0
	props.Rules = ruleNotes(p, h.pipelines.Environments())
	return props
}

// formValue writes a parameter's value as its field shows it: a list one
// item per line, as the form reads it back (formList).
func formValue(prm pipeline.Param, v any) string {
	if items, ok := v.([]any); ok && prm.Type == "list" {
		lines := make([]string, len(items))
		for i, it := range items {
			lines[i] = toString(it)
		}
		return strings.Join(lines, "\n")
	}
	return toString(v)
}

// formList reads a list field: one item per line or comma-separated (the
// hint says both), blanks dropped.
func formList(v string) []any {
	var items []any
	for _, it := range strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == ',' }) {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	return items
}

// approvalNotes says which of p's steps wait for whom.
func approvalNotes(p *pipeline.Pipeline) []pages.ApprovalNote {
	var out []pages.ApprovalNote
	for _, r := range p.ApprovalRules() {
		out = append(out, pages.ApprovalNote{Step: r.Step, Roles: r.Roles, When: r.When, Expr: r.Expr})
	}
	return out
}
