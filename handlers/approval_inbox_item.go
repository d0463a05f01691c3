package handlers

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// inboxItems shapes pending approvals for people: what each deploys where,
// the version it replaces, who may decide, and an agent's call as named
// values (secrets stay redacted: details hold public params only). The
// versions replaced are read in one statement for all of them.
func (h *Handler) inboxItems(ctx context.Context, its []store.InboxItem) ([]pages.InboxItem, error) {
	out := make([]pages.InboxItem, len(its))
	var qs []store.PreviousDeployQuery
	var asked []int // asked[j]: the item qs[j] is for
	now := time.Now()
	for i, it := range its {
		var q *store.PreviousDeployQuery
		if out[i], q = h.inboxItem(it, now); q != nil {
			qs, asked = append(qs, *q), append(asked, i)
		}
	}
	if len(qs) == 0 {
		return out, nil
	}
	// From: the target's current version, by the rule the run page uses.
	prev, err := h.store.TaskPreviousDeploys(ctx, qs)
	if err != nil {
		return nil, err
	}
	for j, i := range asked {
		v := &out[i]
		if prev[j] == nil {
			v.FromNote = "first deploy of this target"
			continue
		}
		var pp map[string]any
		_ = json.Unmarshal(prev[j].Params, &pp)
		v.From = toString(pp[v.VersionParam])
		h.compareLink(v, its[i])
	}
	return out, nil
}

// inboxItem shapes one pending approval and, when the version it replaces
// is to be shown, says which previous deploy (as of now) to look up.
func (h *Handler) inboxItem(it store.InboxItem, now time.Time) (pages.InboxItem, *store.PreviousDeployQuery) {
	v := pages.InboxItem{ID: it.ID, TaskID: it.TaskID, Title: it.Pipeline, Step: it.Step, Team: it.Team,
		CreatedBy: it.CreatedBy, RequestedAt: it.RequestedAt, ExpiresAt: it.ExpiresAt,
		ToolCall: it.Approval.Kind == string(task.ApprovalToolCall), Roles: it.Roles,
		Environment: it.Approval.Kind == string(task.ApprovalEnvironment), Required: it.Required, Approved: len(it.Decisions),
		Changes: changeRows(it.Changes)}
	pipelineName, params := it.Pipeline, it.Params
	if v.ToolCall || it.Kind == string(task.KindAgent) {
		v.Title = "Agent task"
		var d struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
			Plan      json.RawMessage `json:"plan"`
		}
		_ = json.Unmarshal(it.Detail, &d)
		v.Tool, v.Args, v.Plan = d.Tool, namedValues(d.Arguments), namedValues(d.Plan)
		// A deploy or rollback the agent prepared: its plan says where.
		var plan struct {
			Pipeline     string          `json:"pipeline"`
			Params       json.RawMessage `json:"params"`
			RollbackFrom string          `json:"rollback_from"`
		}
		_ = json.Unmarshal(d.Plan, &plan)
		pipelineName, params, v.From = plan.Pipeline, plan.Params, plan.RollbackFrom
	} else {
		var d struct {
			Action string `json:"action"`
		}
		_ = json.Unmarshal(it.Detail, &d)
		v.Runs = d.Action
	}
	p, ok := h.pipelines.Get(pipelineName)
	if !ok || len(params) == 0 {
		return v, nil
	}
	var values map[string]any
	if json.Unmarshal(params, &values) != nil {
		return v, nil
	}
	v.Target, v.TargetTitle, v.To = deployTarget(p, params)
	v.VersionParam = p.VersionParam()
	v.ToURL = p.VersionURL(values)
	v.CompareURL = p.CompareURL(v.From, v.To, values)
	if !v.ToolCall {
		v.Params = paramValues(p, values)
	}
	if v.VersionParam == "" || v.From != "" {
		return v, nil
	}
	return v, &store.PreviousDeployQuery{TeamID: it.TeamID, Pipeline: p.Name, TargetKey: p.TargetKey(values), TaskID: it.TaskID, Before: now}
}

// compareLink links v's change once its From is known (the pipeline's
// links.compare over the approval's deploy params).
func (h *Handler) compareLink(v *pages.InboxItem, it store.InboxItem) {
	p, ok := h.pipelines.Get(it.Pipeline)
	if !ok {
		return
	}
	var values map[string]any
	if json.Unmarshal(it.Params, &values) != nil {
		return
	}
	v.CompareURL = p.CompareURL(v.From, v.To, values)
}

// paramValues lists a deploy's params in the pipeline's order, secrets as
// they are stored (redacted).
func paramValues(p *pipeline.Pipeline, values map[string]any) []pages.KV {
	var out []pages.KV
	for _, prm := range p.Params {
		if v, ok := values[prm.Name]; ok && v != nil {
			out = append(out, pages.KV{Key: prm.Name, Value: toString(v)})
		}
	}
	return out
}

// namedValues lists a JSON object's members by name, nested values as
// compact JSON.
func namedValues(raw json.RawMessage) []pages.KV {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	out := make([]pages.KV, 0, len(m))
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		out = append(out, pages.KV{Key: k, Value: s})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
