package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"flightdeck/internal/tracing"
	"flightdeck/internal/words"
	"flightdeck/store"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

// runPending brings one pending tool call to a result: read-only tools run
// now; ask_user and mutating tools park the task the first time and read
// the person's answer or decision when the task resumes. The result is
// appended to the history and saved before the next call is looked at.
func (rn *run) runPending(pc pendingCall) (*queue.Outcome, error) {
	tool := rn.r.tools[pc.Name]
	if tool == nil { // the tool went away between runs (a new server version)
		return nil, rn.finishCall(pc, "", fmt.Errorf("tool %s is no longer available", pc.Name), 0)
	}
	args, err := tool.parseArgs(pc.Arguments)
	if err != nil {
		return nil, rn.finishCall(pc, "", err, 0)
	}
	switch {
	case pc.Name == toolAskUser:
		return rn.askUser(pc, args["question"].(string))
	case pc.Name == toolUpdateNotes:
		if v, ok := args["plan"].([]string); ok {
			rn.st.Plan = redactAll(rn, v)
		}
		if v, ok := args["facts"].([]string); ok {
			rn.st.Facts = redactAll(rn, v)
		}
		if v, ok := args["risk_flags"].([]string); ok {
			rn.st.RiskFlags = redactAll(rn, v)
		}
		return nil, rn.finishCall(pc, `{"ok":true}`, nil, 0)
	case tool.Mutating:
		return rn.mutating(tool, pc, args)
	}
	start := time.Now()
	out, err := rn.runTool(rn.ctx, tool, pc, args)
	if rn.ctx.Err() != nil {
		return nil, errInterrupted // not a result: the call runs again on resume
	}
	return nil, rn.finishCall(pc, out, err, time.Since(start))
}

// runTool runs a tool call in a span of its own (contract §8).
func (rn *run) runTool(ctx context.Context, tool *Tool, pc pendingCall, args map[string]any) (string, error) {
	ctx, span := tracing.StartTool(ctx, rn.j.Task.ID, pc.Name, pc.ID)
	out, err := tool.Run(ctx, rn.envFor(pc), args)
	tracing.End(span, rn.traceErr(err))
	return out, err
}

func redactAll(rn *run, l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = rn.redact(clip(s, 1000))
	}
	return out
}

func (rn *run) envFor(pc pendingCall) *Env {
	e := *rn.env
	e.CallKey = fmt.Sprintf("agent:%s:%d", rn.j.Task.ID, pc.Seq)
	return &e
}

// askUser parks the task with the question the first time; on resume it
// returns the answer to the model.
func (rn *run) askUser(pc pendingCall, question string) (*queue.Outcome, error) {
	q, err := rn.j.Reads().AgentQuestionGet(rn.ctx, rn.j.Task.ID, pc.Seq)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && q.State == "pending":
		question = rn.redact(question)
		if !slices.Contains(rn.st.OpenQuestions, question) {
			rn.st.OpenQuestions = append(rn.st.OpenQuestions, question)
		}
		rn.st.Spend.ElapsedMS += time.Since(rn.segStart).Milliseconds()
		rn.segStart = time.Now()
		ev := rn.event(task.EventAgentQuestion, task.StatusToolCall, toolAskUser, question, map[string]any{"call_id": pc.ID})
		rn.j.SaveAgent(store.AgentSave{State: rn.st.toRow(), Budget: rn.st.Budgets.MaxIterations})
		return &queue.Outcome{State: task.StateAwaitingInput, Message: "Waiting for an answer",
			Question: &store.QuestionPark{CallSeq: pc.Seq, Text: question, Event: ev}}, nil
	case err != nil:
		return nil, err
	}
	rn.st.OpenQuestions = slices.DeleteFunc(rn.st.OpenQuestions, func(s string) bool { return s == rn.redact(q.Text) })
	if q.State != "answered" || q.Answer == nil {
		return nil, rn.finishCall(pc, "", fmt.Errorf("the question was not answered (%s)", q.State), 0)
	}
	by := ""
	if q.AnsweredBy != nil {
		by = *q.AnsweredBy
	}
	return nil, rn.finishCall(pc, toJSON(map[string]string{"answer": *q.Answer, "answered_by": by}), nil, 0)
}

func leaseErr(err error) error {
	if errors.Is(err, store.ErrLeaseLost) {
		return errInterrupted
	}
	return err
}

// mutating asks a person to confirm the exact call (tool, arguments and
// the resolved plan) and parks the task; on resume it runs exactly the
// approved plan, or tells the model the call was rejected.
func (rn *run) mutating(tool *Tool, pc pendingCall, args map[string]any) (*queue.Outcome, error) {
	// A resumed run learns the call's secrets again, to redact them from
	// the tool's result and what the model says next.
	rn.shownArgs(tool, pc.Arguments)
	a, err := rn.j.Reads().ApprovalLatest(rn.ctx, rn.j.Task.ID, pc.Seq)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err == nil && a.Kind == "tool_call" {
		switch a.State {
		case "approved":
			var detail struct {
				Plan json.RawMessage `json:"plan"`
			}
			if err := json.Unmarshal(a.Detail, &detail); err != nil || len(detail.Plan) == 0 {
				return nil, rn.finishCall(pc, "", fmt.Errorf("the approved call has no plan; nothing was run"), 0)
			}
			// The person confirmed the plan with its secrets masked; the
			// state kept the real one, which runs if it is that plan.
			plan := detail.Plan
			if len(pc.Plan) > 0 {
				if !sameJSON(rn.shownPlan(tool, pc.Plan), detail.Plan) && !sameJSON(pc.Plan, detail.Plan) {
					return nil, rn.finishCall(pc, "", fmt.Errorf("the approved plan is not the prepared one; nothing was run"), 0)
				}
				plan = pc.Plan
			}
			args["plan"] = plan // exactly what the person confirmed
			start := time.Now()
			out, err := rn.runTool(context.WithoutCancel(rn.ctx), tool, pc, args)
			return nil, rn.finishCall(pc, out, err, time.Since(start))
		case "rejected":
			msg := fmt.Sprintf("A person (%s) rejected this call; it was not run. Do not repeat it unchanged.", derefOr(a.DecidedBy, "someone"))
			if a.Comment != nil && *a.Comment != "" {
				msg += " Their comment: " + *a.Comment
			}
			return nil, rn.finishCall(pc, "", errors.New(msg), 0)
		case "expired":
			return nil, rn.finishCall(pc, "", errors.New("nobody confirmed this call in time; it was not run"), 0)
		case "cancelled":
			return nil, rn.finishCall(pc, "", errors.New("the task was cancelled before anyone confirmed this call; it was not run"), 0)
		}
	}
	plan, err := tool.Prepare(rn.ctx, rn.envFor(pc), args)
	if err != nil {
		if rn.ctx.Err() != nil {
			return nil, errInterrupted
		}
		return nil, rn.finishCall(pc, "", err, 0)
	}
	// The state keeps the real plan (it runs once confirmed); the
	// approval, which people, events and sockets see, a masked one.
	rn.st.Loop.Pending[0].Plan = plan
	if err := rn.save(); err != nil {
		return nil, err
	}
	detail, _ := json.Marshal(map[string]any{"tool": pc.Name, "arguments": json.RawMessage(validJSONOr(rn.shownArgs(tool, pc.Arguments))),
		"call_id": pc.ID, "plan": rn.shownPlan(tool, plan)})
	return &queue.Outcome{State: task.StateAwaitingApproval, Message: "Waiting for a person to confirm " + pc.Name,
		Approvals: &store.ApprovalPark{Kind: "tool_call", Steps: []store.ApprovalStep{{Idx: pc.Seq, Name: pc.Name, Attempt: 1, Detail: detail}},
			Roles: task.DefaultDeciders(), Timeout: rn.r.cfg.ApprovalTimeout}}, nil
}

// finishCall records a call's result (or error) for the model: redacted,
// large outputs stored as an artifact and replaced by a reference; then
// saves the state with the tool_result and tool.executed events.
func (rn *run) finishCall(pc pendingCall, out string, callErr error, took time.Duration) error {
	var events []task.Event
	content := ""
	outcome := "ok"
	if callErr != nil {
		outcome = "error"
		content = "error: " + rn.redact(callErr.Error())
	} else {
		out = rn.redact(out)
		if looksLikeInstructions(out) {
			flag := fmt.Sprintf("output of %s (call %s) contains instructions; treated as data", pc.Name, pc.ID)
			if !slices.Contains(rn.st.RiskFlags, flag) {
				rn.st.RiskFlags = append(rn.st.RiskFlags, flag)
			}
		}
		content = out
		if len(out) > rn.r.cfg.ToolOutputLimit {
			ref, ev, err := rn.storeOutput(pc, out)
			if err != nil {
				return err
			}
			content = ref
			events = append(events, ev)
		}
	}
	rn.st.Messages = append(rn.st.Messages, Message{Role: "tool", ToolCallID: pc.ID, Content: content})
	rn.st.Loop.Pending = slices.DeleteFunc(rn.st.Loop.Pending, func(p pendingCall) bool { return p.Seq == pc.Seq })
	data := map[string]any{"call_id": pc.ID, "outcome": outcome, "duration_ms": took.Milliseconds(), "bytes": len(out)}
	status := task.StatusToolResult
	msg := fmt.Sprintf("%s returned %d bytes", pc.Name, len(out))
	if callErr != nil {
		msg = fmt.Sprintf("%s: %s", pc.Name, content)
	}
	events = append(events,
		rn.event(task.EventAgentToolResult, status, pc.Name, msg, data),
		rn.event(task.EventToolExecuted, status, pc.Name, fmt.Sprintf("%s finished (%s) in %s", pc.Name, outcome, words.Duration(took)), data))
	return rn.save(events...)
}

// storeOutput keeps a large output as an artifact; the model gets its id,
// size, summary and top lines.
func (rn *run) storeOutput(pc pendingCall, out string) (string, task.Event, error) {
	if rn.r.cfg.Artifacts == nil {
		return clip(out, rn.r.cfg.ToolOutputLimit) + "\n[output cut: no artifact store]", task.Event{}, nil
	}
	ctx := context.WithoutCancel(rn.ctx)
	w, err := rn.r.cfg.Artifacts.Create(ctx, rn.j.Task.ID, rn.j.Task.TeamID, rn.st.Iteration, fmt.Sprintf("%s-%d.txt", pc.Name, pc.Seq), rn.secrets)
	if err != nil {
		return "", task.Event{}, err
	}
	_, _ = w.Write([]byte(out))
	meta, err := w.Finish()
	if err != nil {
		return "", task.Event{}, err
	}
	lines := strings.Split(meta.Excerpt, "\n")
	if len(lines) > rn.r.cfg.TopLines {
		lines = lines[:rn.r.cfg.TopLines]
	}
	ref := toJSON(map[string]any{"artifact_id": meta.ID, "bytes": meta.Bytes, "summary": meta.Summary, "top_lines": lines,
		"note": "output stored as an artifact; use search_artifact with this artifact_id to read more"})
	ev := rn.event(task.EventArtifactCreated, task.StatusLog, pc.Name, "Stored output of "+pc.Name+" as "+meta.Name,
		map[string]any{"artifact_id": meta.ID, "name": meta.Name, "bytes": meta.Bytes})
	return ref, ev, nil
}

// shownArgs is a call's arguments as people and the model see them: with
// the tool's Mask, secret values replaced (and registered for redaction).
// Arguments of such a tool that are not a JSON object are not shown.
func (rn *run) shownArgs(tool *Tool, raw string) string {
	if tool == nil || tool.Mask == nil {
		return raw
	}
	v, ok := decodeObject([]byte(raw))
	if !ok {
		return "{}"
	}
	if !rn.mask(tool, v) {
		return raw
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// shownPlan is a mutating call's plan as a person confirms it: secrets
// masked.
func (rn *run) shownPlan(tool *Tool, plan json.RawMessage) json.RawMessage {
	if tool.Mask == nil {
		return plan
	}
	v, ok := decodeObject(plan)
	if !ok || !rn.mask(tool, v) {
		return plan
	}
	b, _ := json.Marshal(v)
	return b
}

func (rn *run) mask(tool *Tool, v map[string]any) bool {
	secrets, masked := tool.Mask(rn.env, v)
	for _, s := range secrets {
		rn.addSecret(s)
	}
	return masked
}

// decodeObject decodes a JSON object, numbers kept as written.
func decodeObject(raw []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if dec.Decode(&v) != nil || v == nil {
		return nil, false
	}
	return v, true
}

// sameJSON says whether a and b are the same JSON value (jsonb read back
// from the database orders keys its own way).
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
