package handlers

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/tracing"
	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// taskCreate submits the form: values are typed by the schema, validated by
// the same code as the API, and errors come back inline next to each field.
func (h *Handler) taskCreate(c echo.Context) error {
	u := userOf(c)
	p, ok := h.pipelines.Get(c.FormValue("pipeline"))
	if !ok {
		return errInvalid("pipeline", "unknown pipeline")
	}
	values := map[string]string{"priority": c.FormValue("priority"), "run_at": c.FormValue("run_at")}
	params := map[string]any{}
	fieldErrs := map[string]string{}
	for _, prm := range p.Params {
		v := strings.TrimSpace(c.FormValue(prm.Name))
		values[prm.Name] = v
		if prm.Type == "bool" {
			params[prm.Name] = v == "true" || v == "on"
			continue
		}
		if v == "" {
			continue // defaults and required-ness are the validator's
		}
		switch prm.Type {
		case "int":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				fieldErrs[prm.Name] = "must be a whole number"
				continue
			}
			params[prm.Name] = n
		case "list":
			params[prm.Name] = formList(v)
		default:
			params[prm.Name] = v
		}
	}
	rerender := func(status int, flash string) error {
		return h.render(c, status, "Submit "+p.Name, "tasks", pages.TaskNew(h.taskNewProps(c, p, values, fieldErrs, flash)))
	}
	// Every field is checked, so every error shows at once: the values
	// that parsed go to the validator, the others keep their parse error.
	validated, ferrs := p.ValidateAll(mustJSON(params))
	for _, fe := range ferrs {
		name := strings.TrimPrefix(fe.Field, "params.")
		if _, seen := fieldErrs[name]; !seen {
			fieldErrs[name] = fe.Message
		}
	}
	if len(fieldErrs) == 1 {
		return rerender(http.StatusUnprocessableEntity, "One value needs fixing:")
	}
	if len(fieldErrs) > 1 {
		return rerender(http.StatusUnprocessableEntity, fmt.Sprintf("%d values need fixing:", len(fieldErrs)))
	}
	team, err := deployTeam(u, c.FormValue("team"))
	if err != nil {
		return rerender(toAPIError(err).Status, toAPIError(err).Message)
	}
	prio, err := task.ParsePriority(values["priority"])
	if err != nil {
		return rerender(http.StatusUnprocessableEntity, err.Error())
	}
	in := store.TaskInsertParams{TeamID: team.TeamID, CreatedByID: u.ID, Priority: prio, MaxAttempts: task.MaxAttemptsDefault, MaxPending: h.cfg.MaxPending,
		Traceparent: tracing.Traceparent(c.Request().Context())}
	o := saga.Protection{Override: strings.TrimSpace(c.FormValue("override_reason"))}
	if v := c.FormValue("run_at"); v != "" {
		at, err := time.ParseInLocation("2006-01-02T15:04", v, time.UTC)
		if err != nil {
			return rerender(http.StatusUnprocessableEntity, "Run at must be a date and time (UTC).")
		}
		o.RunAt = &at
	}
	t, _, err := h.submit(c.Request().Context(), u, saga.Submission{Insert: in, Pipeline: p, Params: validated, Team: team.Team, Protection: o})
	if err != nil {
		ae := toAPIError(err)
		if ae.Status >= 500 {
			return err
		}
		if ae.Code == "queue_full" {
			return rerender(http.StatusTooManyRequests, "Your team's queue is full; try again in a moment.")
		}
		return rerender(ae.Status, ae.Message)
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/tasks/%s", t.ID))
}
