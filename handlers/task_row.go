package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"flightdeck/store"
	"flightdeck/views/components"
	"flightdeck/views/pages"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// taskRows and taskRow shape tasks for the list, its socket and the inbox
// alike, so a live row looks like the one the page rendered.
// skipped counts each completed task's skipped steps (nil: none).
func taskRows(cat *pipeline.Catalog, tasks []*task.Task, skipped map[string]int) []pages.TaskRow {
	rows := make([]pages.TaskRow, len(tasks))
	now := time.Now()
	for i, t := range tasks {
		rows[i] = taskRow(cat, t, now)
		rows[i].Skipped = skipped[t.ID]
	}
	return rows
}

func taskRow(cat *pipeline.Catalog, t *task.Task, now time.Time) pages.TaskRow {
	r := pages.TaskRow{
		ID: t.ID, Kind: string(t.Kind), Pipeline: t.Pipeline, State: string(t.State),
		Priority: t.Priority.String(), CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt,
		Ago: ago(now.Sub(t.CreatedAt)), StartedAt: t.StartedAt,
		CancelRequested: t.CancelRequested && !t.State.Terminal(),
	}
	if t.Error != nil {
		r.Error = *t.Error
	}
	if t.StartedAt != nil {
		end := now
		if t.FinishedAt != nil {
			end = *t.FinishedAt
		} else {
			r.Running = !t.State.Terminal()
		}
		r.Duration = components.Duration(end.Sub(*t.StartedAt))
	}
	if t.Kind == task.KindAgent {
		r.Target = excerpt(t.Prompt, 60)
		return r
	}
	if p, ok := cat.Get(t.Pipeline); ok {
		r.Target, r.TargetTitle, r.Version = deployTarget(p, t.Params)
	}
	return r
}

// deployTarget is a deploy's target as the task list and the inbox show it
// (targetChips joined: values, and name=value for the title) and its
// version (pipeline.VersionParam), read from its public params.
func deployTarget(p *pipeline.Pipeline, raw json.RawMessage) (target, title, version string) {
	var params map[string]any
	if json.Unmarshal(raw, &params) != nil {
		return "", "", ""
	}
	chips := targetChips(p, params)
	var vals []string
	for _, c := range chips {
		vals = append(vals, c.Value)
	}
	if vp := p.VersionParam(); vp != "" && params[vp] != nil {
		version = toString(params[vp])
	}
	return strings.Join(vals, " · "), strings.Join(namedChips(chips), ", "), version
}

// targetChips is what a deploy goes to, the one rule of the task list, the
// approvals inbox and the run page: the pipeline's target params
// (pipeline.TargetParams) in the order the pipeline declares its params,
// less secret ones, those without a value, and the version param
// (pipeline.VersionParam), which a default target may hold but every page
// shows in a place of its own.
func targetChips(p *pipeline.Pipeline, params map[string]any) []pages.Param {
	tgt, vp := p.TargetOf(params), p.VersionParam()
	var out []pages.Param
	for _, prm := range p.Params {
		v, ok := tgt[prm.Name]
		if !ok || prm.Secret || v == nil || prm.Name == vp {
			continue
		}
		out = append(out, pages.Param{Name: prm.Name, Value: toString(v)})
	}
	return out
}

// namedChips writes chips as "name=value", as a title or the environments
// page shows them.
func namedChips(chips []pages.Param) []string {
	out := make([]string, len(chips))
	for i, c := range chips {
		out[i] = c.Name + "=" + c.Value
	}
	return out
}

// ago says how long ago, as people say it; static/js/app.js updates it
// the same way while the page is open.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d d ago", int(d.Hours()/24))
}

// excerpt is the first line of s, cut to n characters.
func excerpt(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// skippedSteps counts the skipped steps of the completed ones of tasks,
// for their rows' "completed with 1 step skipped"; no query when none
// completed.
func skippedSteps(ctx context.Context, st *store.Store, tasks []*task.Task) (map[string]int, error) {
	var ids []string
	for _, t := range tasks {
		if t.State == task.StateCompleted {
			ids = append(ids, t.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return st.TaskSkippedSteps(ctx, ids)
}
