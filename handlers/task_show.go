package handlers

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/task"
)

func (h *Handler) taskShow(c echo.Context) error {
	p, err := h.loadTaskShow(c.Request().Context(), userOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	p.CSRFToken = csrfToken(c)
	title := p.Task.Pipeline
	if title == "" {
		title = "Agent task"
	}
	return h.render(c, http.StatusOK, title, "tasks", pages.TaskShow(p))
}

// eventsShown bounds the page's event log; the API has them all.
const eventsShown = 200

// loadTaskShow gathers everything the task page and its live fragments show.
func (h *Handler) loadTaskShow(ctx context.Context, u *auth.User, id string) (pages.TaskShowProps, error) {
	var p pages.TaskShowProps
	t, err := h.store.TaskGet(ctx, u.TeamIDs(), id)
	if err != nil {
		return p, err
	}
	role := u.RoleIn(t.TeamID)
	p.Task = pages.TaskView{ID: t.ID, Kind: string(t.Kind), Pipeline: t.Pipeline, State: string(t.State), Priority: t.Priority.String(),
		CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt, StartedAt: t.StartedAt, FinishedAt: t.FinishedAt, Progress: t.Progress, Prompt: t.Prompt}
	if t.Error != nil {
		p.Task.Error = *t.Error
	}
	if len(t.Params) > 2 {
		p.Task.Params = string(t.Params)
	}
	p.CanCancel = role.AtLeast(auth.RoleDeployer)
	p.CanAdmin = role.AtLeast(auth.RoleAdmin)

	steps, err := h.store.StepList(ctx, t.ID)
	if err != nil {
		return p, err
	}
	var comp []store.StepRow
	for _, s := range steps {
		v := pages.StepView{Index: s.Idx, Name: s.Name, State: s.State, Attempt: s.Attempt, Duration: duration(s.StartedAt, s.FinishedAt)}
		if s.Error != nil {
			v.Error = *s.Error
		}
		p.Steps = append(p.Steps, v)
		if s.CompensationAttempt > 0 {
			comp = append(comp, s)
		}
	}
	// The undo lane runs backwards: last compensated at the bottom.
	sort.SliceStable(comp, func(i, k int) bool { return comp[i].Idx > comp[k].Idx })
	for _, s := range comp {
		p.Compensations = append(p.Compensations, pages.StepView{Index: s.Idx, Name: s.Name, State: s.State})
	}

	aps, err := h.store.ApprovalList(ctx, u.TeamIDs(), t.ID)
	if err != nil {
		return p, err
	}
	for _, a := range aps {
		v := pages.ApprovalView{ID: a.ID, Step: a.Step, State: a.State, RequestedAt: a.RequestedAt, ExpiresAt: a.ExpiresAt}
		if a.DecidedBy != nil {
			v.DecidedBy = *a.DecidedBy
		}
		if a.Comment != nil {
			v.Comment = *a.Comment
		}
		if a.Kind == "tool_call" {
			v.Detail = indentJSON(a.Detail)
		}
		ok, why := task.MayDecide(task.ApprovalKind(a.Kind), a.Roles, t.CreatedByID, u.ID, string(role))
		v.CanDecide = ok
		if !ok {
			v.WhyNot = strings.ToUpper(why[:1]) + why[1:] + "."
		}
		p.Approvals = append(p.Approvals, v)
	}

	if p.Agent, err = h.loadAgentView(ctx, u, t); err != nil {
		return p, err
	}

	arts, err := h.store.ArtifactList(ctx, u.TeamIDs(), t.ID)
	if err != nil {
		return p, err
	}
	for _, a := range arts {
		p.Artifacts = append(p.Artifacts, pages.ArtifactView{ID: a.ID, Name: a.Name, Summary: a.Summary, Excerpt: a.Excerpt, Bytes: a.Bytes})
	}

	events, err := h.store.EventsAfter(ctx, t.ID, max(0, t.LastSeq-eventsShown), eventsShown)
	if err != nil {
		return p, err
	}
	// Later reads may see newer events than the task row: show the state as
	// of the row's seq, and let the next push bring the rest.
	p.Seq = t.LastSeq
	logStep := 0
	for _, e := range events {
		if e.Seq > t.LastSeq {
			break
		}
		p.Events = append(p.Events, pages.EventView{Seq: e.Seq, Time: e.Time, Type: string(e.Type), Status: string(e.Status), StepName: e.StepName, Message: e.Message})
		if e.Type == task.EventStepLog {
			if e.Step != logStep {
				logStep, p.LogTail = e.Step, nil
			}
			p.LogStep = e.StepName
			p.LogTail = append(p.LogTail, e.Message)
		}
	}
	if len(p.LogTail) > 50 {
		p.LogTail = p.LogTail[len(p.LogTail)-50:]
	}
	// Newest first reads best in a live log.
	for i, j := 0, len(p.Events)-1; i < j; i, j = i+1, j-1 {
		p.Events[i], p.Events[j] = p.Events[j], p.Events[i]
	}
	return p, nil
}

func duration(start, end *time.Time) string {
	if start == nil {
		return ""
	}
	stop := time.Now()
	if end != nil {
		stop = *end
	}
	return stop.Sub(*start).Round(time.Millisecond).String()
}
