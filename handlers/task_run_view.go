package handlers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"flightdeck/store"
	"flightdeck/views/components"
	"flightdeck/views/pages"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// runView fills the run page's story of a deploy: what it deploys where,
// its steps (groups nested), the compensation lane, the failing step's
// output and the timeline.
func (h *Handler) runView(ctx context.Context, p *pages.TaskShowProps, t *task.Task, rows []store.StepRow, aps []store.Approval, m *runModel) error {
	pl, _ := h.pipelines.Get(t.Pipeline)
	var params map[string]any
	_ = json.Unmarshal(t.Params, &params)
	if pl != nil {
		d := m.deploy
		if d == nil {
			var err error
			if d, err = h.deployView(ctx, t, pl, params); err != nil {
				return err
			}
			if t.StartedAt != nil {
				m.deploy = d // what came before a started run never changes
			}
		}
		p.Task.Deploy = d
	}
	byIdx := map[int]store.StepRow{}
	for _, r := range rows {
		byIdx[r.Idx] = r
	}
	waiting := map[int]bool{}
	for _, a := range aps {
		if a.State == task.ApprovalPending {
			waiting[a.StepIdx] = true
		}
	}
	now := time.Now()
	planned := planOf(pl, params, rows)
	sig := fnv.New64a()
	for _, st := range planned {
		sv := components.StageView{Group: st.Group, Label: st.label, Join: st.join}
		for _, ps := range st.Steps {
			r, ok := byIdx[ps.Index]
			if !ok {
				r = store.StepRow{Idx: ps.Index, Name: ps.Name, State: task.StepPending}
			}
			sv.Steps = append(sv.Steps, forwardView(r, ps, m.track(ps.Index), waiting[ps.Index], now))
			fmt.Fprintf(sig, "%d:%s;", ps.Index, ps.Name)
		}
		fmt.Fprintf(sig, "|")
		p.Stages = append(p.Stages, sv)
	}
	p.StepsSig = strconv.FormatUint(sig.Sum64(), 36)

	plan := map[int]pipeline.PlannedStep{}
	for _, st := range planned {
		for _, ps := range st.Steps {
			plan[ps.Index] = ps
		}
	}
	p.Undo, p.UndoSig = undoLane(t, rows, plan, m, now)
	// A failed step waiting for a decision shows in its decision card
	// (TaskControl); one retried to success or skipped since did not end
	// the run.
	if f := m.failed(); f > 0 && t.FailedStep == nil {
		if r, ok := byIdx[f]; ok && r.State != task.StepCompleted && r.State != task.StepSkipped {
			v := forwardView(r, plan[f], m.track(f), false, now)
			v.Lane, v.Open = "fail", true
			v.State, v.Display, v.Key = string(task.StepFailed), string(task.StepFailed), string(task.StepFailed)
			p.Failure = &v
		}
	}
	// The header's progress before the first step's event has said how
	// many steps there are: the plan says it.
	if n := len(plan); p.Task.Progress.TotalStep == 0 && n > 0 {
		done := 0
		for _, r := range rows {
			if r.State == task.StepCompleted {
				done++
			}
		}
		p.Task.Progress = task.Progress{Step: done, TotalStep: n, Percent: 100 * done / n}
	}
	// The task's error is shown once, in the header: the failing step's
	// head and the failure's card do not repeat what it already says.
	if p.Task.Error != "" {
		for i := range p.Stages {
			for j := range p.Stages[i].Steps {
				said(&p.Stages[i].Steps[j], p.Task.Error)
			}
		}
		for i := range p.Undo {
			said(&p.Undo[i], p.Task.Error)
		}
		if p.Failure != nil {
			said(p.Failure, p.Task.Error)
		}
	}
	p.Gantt = gantt(t, p.Stages, p.Undo, aps, now)
	return nil
}

// said marks a step's error as one the task's error already says.
func said(v *components.StepView, taskErr string) {
	if v.Error != "" && strings.Contains(taskErr, v.Error) {
		v.ErrorShown = true
	}
}

// plannedStage is a stage of the plan as the page names it.
type plannedStage struct {
	pipeline.Stage
	label, join string
}

// planOf is the run's structure: the pipeline's plan for its params, or,
// for a pipeline this server no longer has, the steps as stored.
func planOf(pl *pipeline.Pipeline, params map[string]any, rows []store.StepRow) []plannedStage {
	var stages []pipeline.Stage
	if pl != nil {
		// Plan wants list params as []string (JSON reads them as []any).
		typed := map[string]any{}
		for k, v := range params {
			if l, ok := v.([]any); ok {
				ss := make([]string, 0, len(l))
				for _, x := range l {
					ss = append(ss, fmt.Sprint(x))
				}
				v = ss
			}
			typed[k] = v
		}
		stages, _, _ = pl.Plan(typed)
	}
	if stages == nil {
		for _, r := range rows {
			if r.Name != "" {
				stages = append(stages, pipeline.Stage{Steps: []pipeline.PlannedStep{{Index: r.Idx, Name: r.Name}}, Join: "all"})
			}
		}
	}
	out := make([]plannedStage, 0, len(stages))
	for _, st := range stages {
		ps := plannedStage{Stage: st}
		if st.Group {
			ps.label = "parallel"
			if pl != nil {
				if fe := forEachOf(pl, st); fe != "" {
					ps.label = "for_each " + fe
				}
			}
			ps.join = "join " + st.Join
			if st.Join == "quorum" {
				ps.join += ":" + strconv.Itoa(st.Quorum)
			}
			if st.Concurrency > 0 {
				ps.join += fmt.Sprintf(", %d at once", st.Concurrency)
			}
		}
		out = append(out, ps)
	}
	return out
}

// forEachOf names the for_each step a group expands, "" for a parallel group.
func forEachOf(pl *pipeline.Pipeline, st pipeline.Stage) string {
	if len(st.Steps) == 0 || st.Steps[0].Item == nil {
		return ""
	}
	for _, s := range pl.Steps {
		if s.ForEach != nil && s.ForEach.Step.Name != "" && st.Steps[0].Name == s.ForEach.Step.Name+"["+fmt.Sprint(st.Steps[0].Item)+"]" {
			return s.ForEach.Step.Name
		}
	}
	return ""
}

// forwardView is a step as its forward lane shows it. A pending step held
// by an approval says so; a running one between attempts says when the
// next comes.
func forwardView(r store.StepRow, ps pipeline.PlannedStep, st *stepTrack, waiting bool, now time.Time) components.StepView {
	v := components.StepView{Index: r.Idx, Name: r.Name, Lane: "step", State: string(r.State), Display: displayState(string(r.State)), Key: string(r.State),
		Attempt: r.Attempt, MaxAttempts: max(ps.Step.Retries+1, st.fwdRetries), StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Log: tail(st.fwd.lines, logLinesShown), Earlier: st.fwd.earlier, ArtifactID: st.fwd.artifact}
	if v.Name == "" {
		v.Name = ps.Name
	}
	if r.Error != nil && (r.State == task.StepFailed || r.State == task.StepCancelled) {
		v.Error = *r.Error
	}
	if r.State == task.StepRunning {
		v.FinishedAt = nil
	}
	switch {
	case r.State == task.StepPending && waiting:
		v.Display, v.Key = "waiting for approval", "waiting_for_approval"
	case r.State == task.StepRunning && st.fwd.retry != nil:
		retrying(&v, st.fwd.retry, now)
	}
	v.Open = v.Key == string(task.StepRunning) || v.Key == "retrying" || r.State == task.StepFailed
	v.Analysis, v.Shift = analysisView(ps, st.fwd.lines), shiftShare(ps, st.fwd.lines)
	return v
}

// retrying says a step waits out its backoff before attempt next of max.
func retrying(v *components.StepView, w *retryWait, now time.Time) {
	v.Key, v.RetryAt = "retrying", &w.at
	v.RetryNote = fmt.Sprintf(" (attempt %d of %d)", w.next, w.max)
	in := max(0, int(w.at.Sub(now).Round(time.Second)/time.Second))
	v.Display = fmt.Sprintf("retrying in %d s%s", in, v.RetryNote)
	if w.max > 0 {
		v.MaxAttempts = w.max
	}
}

// displayState is what a step's badge says: its state in words, undo
// states as what they did ("undone", not "compensated").
func displayState(s string) string {
	switch task.StepState(s) {
	case task.StepCompensating:
		return "undoing"
	case task.StepCompensated:
		return "undone"
	case task.StepCompensationFailed:
		return "undo failed"
	}
	b := []byte(s)
	for i, c := range b {
		if c == '_' {
			b[i] = ' '
		}
	}
	return string(b)
}

// undoLane is the compensation lane: the undos run so far in the order they
// ran, then, while the task compensates, the completed steps still to undo
// (last completed first), so the lane's rows stay put as it proceeds.
func undoLane(t *task.Task, rows []store.StepRow, plan map[int]pipeline.PlannedStep, m *runModel, now time.Time) ([]components.StepView, string) {
	var done, todo []store.StepRow
	for _, r := range rows {
		switch {
		case r.CompensationAttempt > 0:
			done = append(done, r)
		case t.State == task.StateCompensating && r.State == task.StepCompleted && plan[r.Idx].Step.Compensate != nil:
			todo = append(todo, r)
		}
	}
	slices.SortStableFunc(done, func(a, b store.StepRow) int {
		sa, sb := m.track(a.Idx).compSeq, m.track(b.Idx).compSeq
		if sa == 0 || sb == 0 || sa == sb {
			return cmp.Compare(b.Idx, a.Idx)
		}
		return cmp.Compare(sa, sb)
	})
	slices.SortStableFunc(todo, func(a, b store.StepRow) int {
		if a.FinishedAt != nil && b.FinishedAt != nil && !a.FinishedAt.Equal(*b.FinishedAt) {
			return b.FinishedAt.Compare(*a.FinishedAt)
		}
		return cmp.Compare(b.Idx, a.Idx)
	})
	var out []components.StepView
	sig := fnv.New64a()
	for _, r := range append(done, todo...) {
		st := m.track(r.Idx)
		state := r.State
		switch state {
		case task.StepCompensating, task.StepCompensated, task.StepCompensationFailed:
		default:
			state = task.StepPending
		}
		v := components.StepView{Index: r.Idx, Name: r.Name, Lane: "comp", State: string(state), Display: displayState(string(state)), Key: string(state),
			Attempt: r.CompensationAttempt, StartedAt: st.compStart, Log: tail(st.comp.lines, logLinesShown), Earlier: st.comp.earlier,
			ArtifactID: st.comp.artifact}
		if c := plan[r.Idx].Step.Compensate; c != nil {
			v.MaxAttempts = cmp.Or(c.Retries, pipeline.CompensationRetriesDefault) + 1
		}
		if state != task.StepCompensating {
			// the worker's time of the end, as stored with the row
			v.FinishedAt = cmp.Or(r.CompensatedAt, st.compEnd)
		}
		if state == task.StepCompensationFailed && r.Error != nil {
			v.Error = *r.Error
		}
		if state == task.StepCompensating && st.comp.retry != nil {
			retrying(&v, st.comp.retry, now)
		}
		v.Open = state == task.StepCompensating || state == task.StepCompensationFailed
		out = append(out, v)
		fmt.Fprintf(sig, "%d;", r.Idx)
	}
	return out, strconv.FormatUint(sig.Sum64(), 36)
}

// deployView says what a deploy ships where: its target params, its
// version, and the version the target had before (the last deploy of the
// same pipeline and target that completed before this one started).
func (h *Handler) deployView(ctx context.Context, t *task.Task, pl *pipeline.Pipeline, params map[string]any) (*pages.DeployView, error) {
	d := &pages.DeployView{VersionName: pl.VersionParam(), Target: targetChips(pl, params)}
	if d.VersionName == "" {
		return d, nil
	}
	v, ok := params[d.VersionName]
	if !ok {
		return d, nil
	}
	d.Version = fmt.Sprint(v)
	d.VersionURL = pl.VersionURL(params)
	before := time.Now()
	if t.StartedAt != nil {
		before = *t.StartedAt
	}
	prev, err := h.store.TaskPreviousDeploy(ctx, t.TeamID, t.Pipeline, pl.TargetKey(params), t.ID, before)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return d, nil
	case err != nil:
		return nil, err
	}
	var pp map[string]any
	_ = json.Unmarshal(prev.Params, &pp)
	d.From, d.FromTask = fmt.Sprint(pp[d.VersionName]), prev.TaskID
	d.CompareURL = pl.CompareURL(d.From, d.Version, params)
	return d, nil
}

// gantt places each step that ran, each undo and each wait for a
// person on the run's time line, with an axis and a legend of the
// colours it uses.
func gantt(t *task.Task, stages []components.StageView, undo []components.StepView, aps []store.Approval, now time.Time) components.GanttView {
	var g components.GanttView
	start := t.StartedAt
	if start == nil {
		return g
	}
	end := now
	if t.FinishedAt != nil {
		end = *t.FinishedAt
	}
	g.Start, g.End = start, t.FinishedAt
	span := max(end.Sub(*start), time.Millisecond)
	g.Span = components.Duration(end.Sub(*start))
	place := func(from time.Time, to time.Time) (left, width float64) {
		left = 100 * float64(from.Sub(*start)) / float64(span)
		width = 100 * float64(to.Sub(from)) / float64(span)
		left = min(max(left, 0), 99.5)
		width = min(max(width, 0.5), 100-left)
		return left, width
	}
	seen := map[string]bool{}
	bar := func(s components.StepView) {
		if s.StartedAt == nil {
			return
		}
		stop := end
		if s.FinishedAt != nil {
			stop = *s.FinishedAt
		}
		key := barKey(s)
		seen[key] = true
		r := components.GanttRow{Label: s.Name, Lane: s.Lane, Key: key, Start: s.StartedAt, End: s.FinishedAt, Note: s.Shift,
			Title: fmt.Sprintf("%s: %s, %s", s.Name, s.Display, components.Duration(stop.Sub(*s.StartedAt)))}
		if s.Lane == "comp" {
			r.Title = "undo of " + r.Title
		}
		r.Left, r.Width = place(*s.StartedAt, stop)
		g.Rows = append(g.Rows, r)
	}
	for _, st := range stages {
		for _, s := range st.Steps {
			bar(s)
		}
	}
	for _, s := range undo {
		bar(s)
	}
	for _, a := range aps {
		b := components.GanttBand{Start: &a.RequestedAt, End: a.DecidedAt}
		stop := end
		switch {
		case a.DecidedAt != nil:
			stop = *a.DecidedAt
		case a.State != task.ApprovalPending:
			stop = end // ended with the task, or expired
			if a.ExpiresAt.Before(end) {
				stop = a.ExpiresAt
			}
			b.End = &stop
		}
		if stop.Before(*start) {
			continue
		}
		from := a.RequestedAt
		if from.Before(*start) {
			from = *start
		}
		b.Left, b.Width = place(from, stop)
		b.Title = fmt.Sprintf("waited %s for approval of %s", components.Duration(stop.Sub(a.RequestedAt)), a.Step)
		if a.DecidedBy != nil {
			b.Title += fmt.Sprintf(" (%s by %s)", a.State, *a.DecidedBy)
		}
		g.Bands = append(g.Bands, b)
	}
	g.Ticks = components.Ticks(span)
	for _, l := range ganttLegend {
		if seen[l.Class] || l.Class == "approval" && len(g.Bands) > 0 {
			g.Legend = append(g.Legend, l)
		}
	}
	return g
}

// ganttLegend names the timeline's colours, in the order the legend
// lists those a run uses.
var ganttLegend = []components.LegendItem{
	{Class: "completed", Label: "completed"}, {Class: "running", Label: "running"}, {Class: "retrying", Label: "waiting to retry"},
	{Class: "failed", Label: "failed"}, {Class: "cancelled", Label: "stopped"}, {Class: "undone", Label: "completed, then undone"},
	{Class: "undo", Label: "undo"}, {Class: "undo_failed", Label: "undo failed"}, {Class: "approval", Label: "waiting for approval"},
}

// barKey is a bar's colour: what the step did, its undo drawn apart.
func barKey(s components.StepView) string {
	if s.Lane == "comp" {
		if s.State == string(task.StepCompensationFailed) {
			return "undo_failed"
		}
		return "undo"
	}
	switch task.StepState(s.State) {
	case task.StepCompensating, task.StepCompensated, task.StepCompensationFailed:
		return "undone"
	case task.StepSkipped, task.StepCancelled:
		return "cancelled"
	}
	if s.Key == "retrying" {
		return "retrying"
	}
	return s.State
}

// rawEvents is the raw event log, newest first: the newest events that
// are not log lines, and the newest log lines (hidden unless asked for).
func (m *runModel) rawEvents() []pages.EventView {
	evs := append(slices.Clone(tail(m.events, eventsShown)), tail(m.logs, eventsShown)...)
	slices.SortFunc(evs, func(a, b task.Event) int { return cmp.Compare(b.Seq, a.Seq) })
	return eventViews(evs)
}

func eventViews(evs []task.Event) []pages.EventView {
	out := make([]pages.EventView, 0, len(evs))
	for _, e := range evs {
		out = append(out, pages.EventView{Seq: e.Seq, Time: e.Time, Type: string(e.Type), Status: string(e.Status), StepName: e.StepName, Message: e.Message})
	}
	return out
}
