package handlers

import (
	"cmp"
	"net/url"
	"time"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

// taskFilters reads the task list's filters, shared by the page, its
// socket and the API: state, kind, pipeline, created_by, and those the
// dashboard links with (priority, the finished_after / finished_before
// window in RFC 3339).
func taskFilters(q url.Values) (store.TaskListParams, error) {
	p := store.TaskListParams{State: q.Get("state"), Kind: q.Get("kind"), Pipeline: q.Get("pipeline"), CreatedBy: q.Get("created_by")}
	if p.State != "" && !task.State(p.State).Valid() {
		return p, errInvalid("state", "unknown state %q", p.State)
	}
	if p.Kind != "" && p.Kind != string(task.KindDeploy) && p.Kind != string(task.KindAgent) {
		return p, errInvalid("kind", "kind must be deploy or agent")
	}
	if err := cmp.Or(checkText("pipeline", p.Pipeline), checkText("created_by", p.CreatedBy)); err != nil {
		return p, err
	}
	return p, taskFilterExtras(q, &p)
}

// taskFilterExtras reads the filters the dashboard links with.
func taskFilterExtras(q url.Values, p *store.TaskListParams) error {
	if s := q.Get("priority"); s != "" {
		prio, err := task.ParsePriority(s)
		if err != nil {
			return errInvalid("priority", "priority must be hotfix, high, normal or low")
		}
		p.Priority = prio
	}
	for _, f := range []struct {
		name string
		to   *time.Time
	}{{"finished_after", &p.FinishedAfter}, {"finished_before", &p.FinishedBefore}} {
		if s := q.Get(f.name); s != "" {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return errInvalid(f.name, "%s must be a time in RFC 3339 (2026-11-25T00:00:00Z)", f.name)
			}
			*f.to = t
		}
	}
	return nil
}

// matchesExtras reports whether t passes the filters of taskFilterExtras.
func matchesExtras(p store.TaskListParams, t *task.Task) bool {
	if p.Priority != 0 && t.Priority != p.Priority {
		return false
	}
	if p.FinishedAfter.IsZero() && p.FinishedBefore.IsZero() {
		return true
	}
	return t.FinishedAt != nil && !t.FinishedAt.Before(p.FinishedAfter) &&
		(p.FinishedBefore.IsZero() || t.FinishedAt.Before(p.FinishedBefore))
}
