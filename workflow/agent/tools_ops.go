package agent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"flightdeck/internal/tracing"
	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// Names of the tools the loop handles itself.
const (
	toolAskUser     = "ask_user"
	toolUpdateNotes = "update_notes"
)

// builtinTools are the ops agent's tools: read-only ones run at once,
// mutating ones wait for a person.
func builtinTools() []*Tool {
	return []*Tool{
		{Name: "get_task", Description: "Look up one task of your team: state, params, error, steps, approvals, artifacts (ids, names, sizes).",
			Params: []Param{{Name: "task_id", Type: "string", Description: "the task's id (uuid)", Required: true, Max: 64}},
			Run:    runGetTask},
		{Name: "list_tasks", Description: "List your team's tasks, newest first, optionally filtered.",
			Params: []Param{
				{Name: "state", Type: "string", Description: "only tasks in this state", Enum: stateNames()},
				{Name: "kind", Type: "string", Description: "deploy or agent", Enum: []string{"deploy", "agent"}},
				{Name: "pipeline", Type: "string", Description: "only tasks of this pipeline", Max: 100},
				{Name: "limit", Type: "integer", Description: "how many (default 20)", Min: 1, Max: 50},
			},
			Run: runListTasks},
		{Name: "list_pipelines", Description: "List the pipelines that can be deployed, with their parameters and steps.",
			Run: runListPipelines},
		{Name: "get_task_events", Description: "Read a task's progress events in order (step logs, failures, approvals).",
			Params: []Param{
				{Name: "task_id", Type: "string", Description: "the task's id", Required: true, Max: 64},
				{Name: "after_seq", Type: "integer", Description: "only events after this seq (default 0)", Min: 0, Max: 1 << 30},
				{Name: "limit", Type: "integer", Description: "how many (default 50)", Min: 1, Max: 200},
			},
			Run: runTaskEvents},
		{Name: "search_artifact", Description: "Search an artifact (a stored output or log) for lines matching a regular expression; returns matching lines with their line numbers.",
			Params: []Param{
				{Name: "artifact_id", Type: "string", Description: "the artifact's id", Required: true, Max: 64},
				{Name: "pattern", Type: "string", Description: "RE2 regular expression, e.g. (?i)error|timeout", Required: true, Max: 200},
				{Name: "max_lines", Type: "integer", Description: "most lines to return (default 40)", Min: 1, Max: 200},
			},
			Run: runSearchArtifact},
		{Name: toolUpdateNotes, Description: "Record your working notes: the plan, facts you established, and risks you see. Each list given replaces the previous one.",
			Params: []Param{
				{Name: "plan", Type: "string_list", Description: "next steps"},
				{Name: "facts", Type: "string_list", Description: "facts established so far"},
				{Name: "risk_flags", Type: "string_list", Description: "risks a person should know about"},
			}},
		{Name: toolAskUser, Description: "Ask the person who gave you this task a question and wait for the answer. Use it when the task is ambiguous.",
			Params: []Param{{Name: "question", Type: "string", Description: "the question", Required: true, Max: 2000}}},
		{Name: "start_deploy", Description: "Start a deploy task of a pipeline with parameters (as the person who gave you this task).",
			Mutating: true,
			Params: []Param{
				{Name: "pipeline", Type: "string", Description: "pipeline name", Required: true, Max: 100},
				{Name: "params", Type: "object", Description: "the pipeline's parameters", Required: true},
				{Name: "priority", Type: "string", Description: "default normal", Enum: []string{"hotfix", "high", "normal", "low"}},
			},
			Prepare: prepareDeploy, Run: runDeploy, Mask: maskDeploy},
		{Name: "rollback", Description: "Roll a deploy target back: redeploy the previous successful deploy of the same pipeline and target, " +
			"where the target is a deploy's parameters minus its version parameter (version, image_tag, ref, …). Name the target with task_id " +
			"(any deploy of it, e.g. the one that failed) or with target (and pipeline): the parameters that are not the version, defaults applying " +
			"to omitted ones. A pipeline without a version parameter is rolled back to the newest older deploy of the target whose parameters differ.",
			Mutating: true,
			Params: []Param{
				{Name: "task_id", Type: "string", Description: "a deploy task of the target (its params minus the version are the target)", Max: 64},
				{Name: "pipeline", Type: "string", Description: "the pipeline (default: task_id's, else web-service)", Max: 100},
				{Name: "target", Type: "object", Description: "the target's parameters, without the version, e.g. {\"app\":\"shop\",\"env\":\"staging\"}"},
				{Name: "app", Type: "string", Description: "shorthand for target.app", Max: 100},
				{Name: "env", Type: "string", Description: "shorthand for target.env", Max: 100},
			},
			Prepare: prepareRollback, Run: runDeploy, Mask: maskDeploy},
		{Name: "cancel_task", Description: "Cancel a task of your team (completed steps are undone).",
			Mutating: true,
			Params:   []Param{{Name: "task_id", Type: "string", Description: "the task's id", Required: true, Max: 64}},
			Prepare:  prepareCancel, Run: runCancel},
	}
}

func stateNames() []string {
	out := make([]string, len(task.States))
	for i, s := range task.States {
		out[i] = string(s)
	}
	return out
}

func toJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf(`{"error":%q}`, err.Error())
	}
	return string(b)
}

// taskView is what the model sees of a task: secret parameters masked.
func (e *Env) taskView(t *task.Task) map[string]any {
	params := map[string]any{}
	_ = json.Unmarshal(t.Params, &params)
	if p, ok := e.Catalog.Get(t.Pipeline); ok {
		for _, prm := range p.Params {
			if prm.Secret {
				if s, ok := params[prm.Name].(string); ok && s != "" && s != redacted && e.AddSecret != nil {
					e.AddSecret(s)
				}
				if _, ok := params[prm.Name]; ok {
					params[prm.Name] = redacted
				}
			}
		}
	}
	v := map[string]any{"id": t.ID, "kind": t.Kind, "state": t.State, "priority": t.Priority.String(),
		"created_by": t.CreatedBy, "created_at": t.CreatedAt, "finished_at": t.FinishedAt, "error": t.Error}
	if t.Kind == task.KindDeploy {
		v["pipeline"], v["params"] = t.Pipeline, params
	} else {
		v["prompt"] = t.Prompt
	}
	return v
}

func runGetTask(ctx context.Context, e *Env, args map[string]any) (string, error) {
	id := args["task_id"].(string)
	t, err := e.Store.TaskGet(ctx, e.teams(), id)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("no task %s in your team", id)
	}
	if err != nil {
		return "", err
	}
	v := e.taskView(t)
	if len(t.Result) > 0 && t.Kind == task.KindAgent {
		v["result"] = t.Result
	}
	steps, err := e.Store.TaskSteps(ctx, e.teams(), id)
	if err != nil {
		return "", err
	}
	arts, err := e.Store.ArtifactList(ctx, e.teams(), id)
	if err != nil {
		return "", err
	}
	var sv []map[string]any
	for _, s := range steps {
		sv = append(sv, map[string]any{"index": s.Index, "name": s.Name, "state": s.State, "attempt": s.Attempt, "error": s.Error})
	}
	var av []map[string]any
	for _, a := range arts {
		av = append(av, map[string]any{"artifact_id": a.ID, "name": a.Name, "step_index": a.StepIdx, "bytes": a.Bytes, "summary": a.Summary})
	}
	v["steps"], v["artifacts"] = sv, av
	if approvals, err := e.Store.ApprovalList(ctx, e.teams(), id); err == nil && len(approvals) > 0 {
		var apv []map[string]any
		for _, a := range approvals {
			apv = append(apv, map[string]any{"step": a.Step, "state": a.State, "decided_by": a.DecidedBy})
		}
		v["approvals"] = apv
	}
	return toJSON(v), nil
}

func runListTasks(ctx context.Context, e *Env, args map[string]any) (string, error) {
	p := store.TaskListParams{TeamIDs: e.teams(), Limit: 20}
	if s, ok := args["state"].(string); ok {
		p.State = s
	}
	if s, ok := args["kind"].(string); ok {
		p.Kind = s
	}
	if s, ok := args["pipeline"].(string); ok {
		p.Pipeline = s
	}
	if n, ok := args["limit"].(int); ok {
		p.Limit = n
	}
	tasks, _, err := e.Store.TaskList(ctx, p)
	if err != nil {
		return "", err
	}
	out := []any{}
	for _, t := range tasks {
		out = append(out, e.taskView(t))
	}
	return jsonLines(map[string]any{"tasks": len(out), "format": "one task per line"}, out), nil
}

// jsonLines writes a header line, then one JSON value per line: a long list
// stored as an artifact then still has useful top lines, and search_artifact
// finds single entries.
func jsonLines(header map[string]any, items []any) string {
	var b strings.Builder
	b.WriteString(toJSON(header))
	for _, it := range items {
		b.WriteByte('\n')
		b.WriteString(toJSON(it))
	}
	return b.String()
}

func runListPipelines(_ context.Context, e *Env, _ map[string]any) (string, error) {
	var out []map[string]any
	for _, p := range e.Catalog.All() {
		out = append(out, map[string]any{"name": p.Name, "description": p.Description, "params": p.Params, "steps": p.StepNames()})
	}
	return toJSON(map[string]any{"pipelines": out}), nil
}

func runTaskEvents(ctx context.Context, e *Env, args map[string]any) (string, error) {
	after, _ := args["after_seq"].(int)
	limit, ok := args["limit"].(int)
	if !ok {
		limit = 50
	}
	evs, err := e.Store.EventList(ctx, e.teams(), args["task_id"].(string), after, limit)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("no task %s in your team", args["task_id"])
	}
	if err != nil {
		return "", err
	}
	out := []any{}
	for _, ev := range evs {
		out = append(out, map[string]any{"seq": ev.Seq, "type": ev.Type, "step": ev.Step, "step_name": ev.StepName,
			"tool": ev.Tool, "message": ev.Message, "time": ev.Time})
	}
	return jsonLines(map[string]any{"events": len(out), "format": "one event per line"}, out), nil
}

func runSearchArtifact(ctx context.Context, e *Env, args map[string]any) (string, error) {
	re, err := regexp.Compile(args["pattern"].(string))
	if err != nil {
		return "", fmt.Errorf("pattern is not a valid regular expression: %v", err)
	}
	maxLines, ok := args["max_lines"].(int)
	if !ok {
		maxLines = 40
	}
	id := args["artifact_id"].(string)
	meta, err := e.Store.ArtifactGet(ctx, e.teams(), id)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("no artifact %s in your team", id)
	}
	if err != nil {
		return "", err
	}
	var matches []string
	lineNo, more := 0, false
	var carry []byte
	scan := func(b []byte, final bool) {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			lineNo++
			if re.Match(sc.Bytes()) {
				if len(matches) >= maxLines {
					more = true
					return
				}
				l := sc.Text()
				if len(l) > 500 {
					l = l[:500] + "…"
				}
				matches = append(matches, fmt.Sprintf("%d: %s", lineNo, l))
			}
		}
	}
	errStop := errors.New("enough")
	err = e.Store.ArtifactChunks(ctx, meta.ID, func(chunk []byte) error {
		data := append(carry, chunk...)
		i := bytes.LastIndexByte(data, '\n')
		if i < 0 {
			carry = data
			return nil
		}
		scan(data[:i+1], false)
		carry = append([]byte(nil), data[i+1:]...)
		if more {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return "", err
	}
	if !more && len(carry) > 0 {
		scan(carry, true)
	}
	return toJSON(map[string]any{"artifact_id": meta.ID, "name": meta.Name, "bytes": meta.Bytes,
		"matches": matches, "more": more}), nil
}

// deployPlan is the exact deploy a mutating tool will start.
type deployPlan struct {
	Pipeline string         `json:"pipeline"`
	Params   map[string]any `json:"params"`
	Priority string         `json:"priority"`
	// Rollback only: the version being replaced (pipelines with a version
	// parameter), the deploy being replaced and the one whose params are
	// deployed again. Secret params are not shown in the plan; they are
	// taken from RollbackTo when it runs.
	RollbackFrom     string `json:"rollback_from,omitempty"`
	RollbackFromTask string `json:"rollback_from_task,omitempty"`
	RollbackTo       string `json:"rollback_to_task,omitempty"`
}

// redacted replaces a secret value wherever one would be shown.
const redacted = pipeline.Redacted

// maskDeploy masks the secret parameters of the named pipeline (default
// web-service, as rollback's) in a deploy call's "params" and "target", or
// in a plan's "params". A pipeline it does not know has no known secrets:
// such a call fails in Prepare and never runs.
func maskDeploy(e *Env, v map[string]any) ([]string, bool) {
	name, _ := v["pipeline"].(string)
	if name == "" {
		name = "web-service"
	}
	p, ok := e.Catalog.Get(name)
	if !ok {
		return nil, false
	}
	var secrets []string
	masked := false
	for _, key := range []string{"params", "target"} {
		m, ok := v[key].(map[string]any)
		if !ok {
			continue
		}
		for _, prm := range p.Params {
			val, ok := m[prm.Name]
			if !ok || !prm.Secret || val == redacted {
				continue
			}
			switch x := val.(type) {
			case string:
				secrets = append(secrets, x)
			case []any:
				for _, it := range x {
					if s, ok := it.(string); ok {
						secrets = append(secrets, s)
					}
				}
			case []string:
				secrets = append(secrets, x...)
			}
			m[prm.Name] = redacted
			masked = true
		}
	}
	return secrets, masked
}

func prepareDeploy(_ context.Context, e *Env, args map[string]any) (json.RawMessage, error) {
	name := args["pipeline"].(string)
	p, ok := e.Catalog.Get(name)
	if !ok {
		return nil, fmt.Errorf("unknown pipeline %q; list_pipelines shows them", name)
	}
	raw, _ := json.Marshal(args["params"])
	params, ferr := p.Validate(raw)
	if ferr != nil {
		return nil, fmt.Errorf("params are not valid for %s: %s", name, ferr.Error())
	}
	prio, _ := args["priority"].(string)
	if prio == "" {
		prio = "normal"
	}
	return json.Marshal(deployPlan{Pipeline: p.Name, Params: params, Priority: prio})
}

// runDeploy starts the planned deploy as the agent task's creator. The
// call's key makes it idempotent: a resumed agent re-running the call
// gets the same deploy task back.
func runDeploy(ctx context.Context, e *Env, args map[string]any) (string, error) {
	var plan deployPlan
	if err := json.Unmarshal(args["plan"].(json.RawMessage), &plan); err != nil {
		return "", fmt.Errorf("bad plan: %v", err)
	}
	prio, err := task.ParsePriority(plan.Priority)
	if err != nil {
		return "", err
	}
	p, ok := e.Catalog.Get(plan.Pipeline)
	if !ok {
		return "", fmt.Errorf("unknown pipeline %q", plan.Pipeline)
	}
	if plan.RollbackTo != "" {
		if err := e.restoreSecrets(ctx, p, &plan); err != nil {
			return "", err
		}
	}
	params, _ := json.Marshal(plan.Params)
	sum := sha256.Sum256(append([]byte(plan.Pipeline+"\x00"), params...))
	// Stored as any submit stores a deploy: the secret params apart, so
	// they reach only its worker.
	in := store.TaskInsertParams{TeamID: e.Task.TeamID, CreatedByID: e.Task.CreatedByID, Priority: prio, MaxAttempts: task.MaxAttemptsDefault,
		IdempotencyKey: e.CallKey, RequestHash: sum[:], MaxPending: e.MaxPending,
		Traceparent: tracing.Traceparent(ctx)} // the agent's tool span: its run links to the agent's
	// the one submit: the environment's rules hold for an agent's deploy
	// as for any other; an agent never overrides them
	t, _, err := saga.Submit(ctx, e.Store, saga.Submission{Insert: in, Pipeline: p, Params: plan.Params, Team: e.Task.Team,
		Protection: saga.Protection{Rules: e.Catalog.Environments()}})
	if errors.Is(err, store.ErrQueueFull) {
		return "", fmt.Errorf("the team's queue is full; try later")
	}
	if err != nil {
		return "", err
	}
	return toJSON(map[string]any{"started_task_id": t.ID, "pipeline": t.Pipeline, "state": t.State, "params": e.taskView(t)["params"]}), nil
}

func prepareCancel(ctx context.Context, e *Env, args map[string]any) (json.RawMessage, error) {
	id := args["task_id"].(string)
	t, err := e.Store.TaskGet(ctx, e.teams(), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("no task %s in your team", id)
	}
	if err != nil {
		return nil, err
	}
	if t.ID == e.Task.ID {
		return nil, fmt.Errorf("you cannot cancel yourself; give your final answer instead")
	}
	if t.State.Terminal() {
		return nil, fmt.Errorf("task %s already ended (%s)", id, t.State)
	}
	return json.Marshal(map[string]any{"task_id": t.ID, "kind": t.Kind, "pipeline": t.Pipeline, "state": t.State})
}

func runCancel(ctx context.Context, e *Env, args map[string]any) (string, error) {
	var plan struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal(args["plan"].(json.RawMessage), &plan); err != nil {
		return "", fmt.Errorf("bad plan: %v", err)
	}
	t, err := e.Store.TaskCancel(ctx, e.teams(), plan.TaskID, e.Task.CreatedBy+" (via agent task "+e.Task.ID+")")
	switch {
	case errors.Is(err, store.ErrTerminal):
		return toJSON(map[string]any{"task_id": plan.TaskID, "result": "already ended"}), nil
	case errors.Is(err, store.ErrConflict):
		return toJSON(map[string]any{"task_id": plan.TaskID, "result": "already being cancelled"}), nil
	case err != nil:
		return "", err
	}
	return toJSON(map[string]any{"task_id": t.ID, "state": t.State}), nil
}

// looksLikeInstructions flags tool output that tries to steer the model,
// so the state records the risk (the output still cannot run anything).
func looksLikeInstructions(s string) bool {
	l := strings.ToLower(s)
	for _, m := range []string{"ignore previous instructions", "ignore all previous", "disregard previous", "you must now", "system prompt"} {
		if strings.Contains(l, m) {
			return true
		}
	}
	return false
}
