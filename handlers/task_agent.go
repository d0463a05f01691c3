package handlers

import (
	"context"
	"encoding/json"
	"errors"

	"flightdeck/internal/auth"
	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/agent"
	"flightdeck/workflow/task"
)

// loadAgentView is the agent section of the task page: for agent tasks
// their answer, questions and notes; for failed deploys on a server with an
// LLM, the "Explain this failure" action.
func (h *Handler) loadAgentView(ctx context.Context, u *auth.User, t *task.Task) (*pages.AgentView, error) {
	if t.Kind == task.KindDeploy {
		if t.State == task.StateFailed && h.cfg.AgentsEnabled() && u.May(t.TeamID, task.ActExplain) {
			return &pages.AgentView{ExplainURL: "/tasks/" + t.ID + "/explain"}, nil
		}
		return nil, nil
	}
	v := &pages.AgentView{CanInput: u.May(t.TeamID, task.ActAgentInput), Running: !t.State.Terminal()}
	if len(t.Result) > 0 {
		var res struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(t.Result, &res)
		v.Answer = res.Text
	}
	qs, err := h.store.AgentQuestionList(ctx, []string{t.TeamID}, t.ID)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		qv := pages.QuestionView{ID: q.ID, Text: q.Text, State: q.State}
		if q.Answer != nil {
			qv.Answer = *q.Answer
		}
		if q.AnsweredBy != nil {
			qv.AnsweredBy = *q.AnsweredBy
		}
		v.Questions = append(v.Questions, qv)
	}
	row, err := h.store.AgentStateView(ctx, []string{t.TeamID}, t.ID)
	if errors.Is(err, store.ErrNotFound) {
		return v, nil
	}
	if err != nil {
		return nil, err
	}
	st, err := agent.StateFromRow(row)
	if err != nil {
		return v, nil //nolint:nilerr // an unreadable state only hides the notes
	}
	v.Plan, v.Facts, v.RiskFlags = st.Plan, st.Facts, st.RiskFlags
	v.Iteration, v.MaxIterations, v.Tokens, v.ToolCalls = st.Iteration, st.Budgets.MaxIterations, st.Spend.Tokens, st.Spend.ToolCalls
	return v, nil
}

// indentJSON lays out a JSON document for people (keys sorted).
func indentJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return string(raw)
	}
	return string(b)
}
