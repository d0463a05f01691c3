package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

func (h *Handler) taskShow(c echo.Context) error {
	m := newRunModel()
	p, err := h.loadTaskShow(c.Request().Context(), userOf(c), c.Param("id"), m)
	if errors.Is(err, store.ErrNotFound) {
		return notFoundPage("No such task", "None of your teams' tasks has the id "+c.Param("id")+". It may be mistyped, or the task is another team's.",
			"/tasks", "Back to tasks")
	}
	if err != nil {
		return err
	}
	if m.seq == p.Seq {
		h.runModels.keep(p.Task.ID, m, -1) // for the page's socket (after_seq=p.Seq)
	}
	p.CSRFToken = csrfToken(c)
	p.SectionSigs = sectionSigs(p)
	title := p.Task.Pipeline
	if title == "" {
		title = "Agent task"
	}
	return h.render(c, http.StatusOK, title, "tasks", pages.TaskShow(p))
}

// taskResolution is who resolved t (a task an admin marked resolved in
// needs_attention) and their comment, from its last event; "" when no one did.
func (h *Handler) taskResolution(ctx context.Context, t *task.Task) (string, error) {
	if t.LastSeq < 1 {
		return "", nil
	}
	last, err := h.store.EventsAfter(ctx, t.ID, t.LastSeq-1, 1)
	if err != nil || len(last) == 0 || last[0].Type != task.EventTaskFailed {
		return "", err
	}
	var d struct{ Action, By, Comment string }
	if json.Unmarshal(last[0].Data, &d) != nil || d.Action != "resolve" {
		return "", nil
	}
	res := "Resolved by " + d.By
	if d.Comment != "" {
		res += ": “" + d.Comment + "”"
	}
	return res, nil
}

// loadTaskShow gathers everything the run page and its live fragments
// show. m holds the events folded so far (the page's socket keeps it
// between pushes); the ones since are read and folded in.
func (h *Handler) loadTaskShow(ctx context.Context, u *auth.User, id string, m *runModel) (pages.TaskShowProps, error) {
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
	p.Task.CancelRequested = t.CancelRequested && !t.State.Terminal()
	if t.RerunOf != nil {
		p.Task.RerunOf = *t.RerunOf
	}
	if len(t.Params) > 2 {
		p.Task.Params = string(t.Params)
	}
	// Cancel and Set priority do nothing while steps are being undone or an
	// admin's decision is awaited, so they are not offered then.
	undoing := t.State == task.StateCompensating || t.State == task.StateNeedsAttention
	p.CanSetPriority = u.May(t.TeamID, task.ActSetPriority) && !undoing
	// the store's rule (whether steps ran changes only what a cancel does)
	cancel, _ := task.CancelOf(t.State, true)
	p.CanCancel = u.May(t.TeamID, task.ActCancel) && cancel != task.CancelRefused
	p.CanRerun = u.May(t.TeamID, task.ActRerun)
	p.CanResolve = u.May(t.TeamID, task.ActResolve)
	if t.State == task.StateFailed {
		// An admin's resolution is a note, not the task's error.
		if res, err := h.taskResolution(ctx, t); err != nil {
			return p, err
		} else if res != "" {
			p.Task.Resolution, p.Task.Error = res, ""
		}
	}

	// Later reads may see newer events than the task row: show the state as
	// of the row's seq, and let the next push bring the rest.
	p.Seq = t.LastSeq
	for m.seq < t.LastSeq {
		events, err := h.store.EventsAfter(ctx, t.ID, m.seq, 5000)
		if err != nil {
			return p, err
		}
		h.metrics.runEvents.Add(float64(len(events)))
		if len(events) == 0 {
			break
		}
		m.fold(events, t.LastSeq)
	}

	p.Control = controlView(t, u, role, m)

	steps, err := h.store.StepList(ctx, t.ID)
	if err != nil {
		return p, err
	}
	if t.State == task.StateCompleted {
		for _, st := range steps {
			if st.State == task.StepSkipped {
				p.Task.Skipped++
			}
		}
	}
	aps, err := h.store.ApprovalList(ctx, u.TeamIDs(), t.ID)
	if err != nil {
		return p, err
	}
	if p.Notes, err = h.protectionNotes(ctx, t); err != nil {
		return p, err
	}
	for _, a := range aps {
		v := pages.ApprovalView{ID: a.ID, Step: a.Step, State: string(a.State), RequestedAt: a.RequestedAt, ExpiresAt: a.ExpiresAt,
			ToolCall: a.Kind == string(task.ApprovalToolCall), Roles: a.Roles}
		if a.DecidedBy != nil {
			v.DecidedBy = *a.DecidedBy
		}
		if a.Comment != nil {
			v.Comment = *a.Comment
		}
		if a.Kind == "tool_call" {
			v.Detail = indentJSON(a.Detail)
		}
		v.Environment, v.Required, v.Changes = a.Kind == string(task.ApprovalEnvironment), a.Required, changeRows(a.Changes)
		for _, d := range a.Decisions {
			line := d.By + " " + d.Decision + "d"
			if d.Comment != "" {
				line += ": " + d.Comment
			}
			v.Decisions = append(v.Decisions, line)
		}
		ok, why := task.MayDecide(task.ApprovalKind(a.Kind), a.Roles, t.CreatedByID, u.ID, string(role))
		for _, d := range a.Decisions {
			if ok && d.By == u.Email {
				ok, why = false, "you decided already; another reviewer decides next"
			}
		}
		v.CanDecide = ok
		if !ok {
			v.WhyNot = strings.ToUpper(why[:1]) + why[1:] + "."
		}
		p.Approvals = append(p.Approvals, v)
	}
	if pl, ok := h.pipelines.Get(t.Pipeline); ok && !t.State.Terminal() {
		for _, d := range saga.Decisions(pl, h.pipelines.Environments(), t, aps) {
			p.Decisions = append(p.Decisions, pages.DecisionView{What: d.What, Who: d.Who, State: d.State})
		}
	}
	if t.Kind == task.KindDeploy {
		if err := h.runView(ctx, &p, t, steps, aps, m); err != nil {
			return p, err
		}
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
	p.Events = m.rawEvents()
	return p, nil
}
