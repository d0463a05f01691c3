package agent

import (
	"encoding/json"
	"fmt"
	"time"

	"flightdeck/store"
)

// Budgets bound one agent task. Zero values mean the defaults.
type Budgets struct {
	MaxIterations    int `json:"max_iterations"`     // model calls, default 20
	MaxTokens        int `json:"max_tokens"`         // total tokens reported by the server, default 200000
	MaxToolCalls     int `json:"max_tool_calls"`     // default 50
	WallClockSeconds int `json:"wall_clock_seconds"` // running time (not time waiting for people), default 600
}

func (b Budgets) withDefaults() Budgets {
	if b.MaxIterations <= 0 {
		b.MaxIterations = 20
	}
	if b.MaxTokens <= 0 {
		b.MaxTokens = 200000
	}
	if b.MaxToolCalls <= 0 {
		b.MaxToolCalls = 50
	}
	if b.WallClockSeconds <= 0 {
		b.WallClockSeconds = 600
	}
	return b
}

// Spend is what a task used of its budgets so far.
type Spend struct {
	Iterations int   `json:"iterations"`
	Tokens     int   `json:"tokens"`
	ToolCalls  int   `json:"tool_calls"`
	ElapsedMS  int64 `json:"elapsed_ms"`
	LLMRetries int   `json:"llm_retries"`
}

// pendingCall is a tool call the model made that has no result yet. A
// resumed task finishes these before it asks the model again, so calls that
// completed (their result is in the history) never run twice.
type pendingCall struct {
	Seq       int             `json:"seq"` // unique per task: approvals, questions and idempotency keys hang on it
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Plan      json.RawMessage `json:"plan,omitempty"` // mutating: the exact action a person confirms
}

// loopState is the loop's own bookkeeping.
type loopState struct {
	Pending    []pendingCall `json:"pending"`
	NextSeq    int           `json:"next_seq"`
	Invalid    int           `json:"invalid"` // invalid tool calls or replies so far
	NoteCursor int64         `json:"note_cursor"`
}

// State is an agent task's working memory, persisted after every step.
type State struct {
	Goal          string    `json:"goal"`
	Iteration     int       `json:"iteration"`
	Budgets       Budgets   `json:"budgets"`
	Spend         Spend     `json:"spend"`
	Plan          []string  `json:"plan"`
	Facts         []string  `json:"facts"`
	OpenQuestions []string  `json:"open_questions"`
	RiskFlags     []string  `json:"risk_flags"`
	Messages      []Message `json:"messages"` // tool outputs over the limit are artifact references
	Loop          loopState `json:"loop"`
}

func (s *State) toRow() store.AgentState {
	m := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	return store.AgentState{Goal: s.Goal, Iteration: s.Iteration, Budgets: m(s.Budgets), Spend: m(s.Spend),
		Plan: m(nonNil(s.Plan)), Facts: m(nonNil(s.Facts)), OpenQuestions: m(nonNil(s.OpenQuestions)), RiskFlags: m(nonNil(s.RiskFlags)),
		Messages: m(s.Messages), Loop: m(s.Loop)}
}

// StateFromRow decodes a persisted state (also for pages).
func StateFromRow(r *store.AgentState) (*State, error) {
	s := &State{Goal: r.Goal, Iteration: r.Iteration}
	for _, f := range []struct {
		raw json.RawMessage
		dst any
	}{{r.Budgets, &s.Budgets}, {r.Spend, &s.Spend}, {r.Plan, &s.Plan}, {r.Facts, &s.Facts},
		{r.OpenQuestions, &s.OpenQuestions}, {r.RiskFlags, &s.RiskFlags}, {r.Messages, &s.Messages}, {r.Loop, &s.Loop}} {
		if len(f.raw) == 0 {
			continue
		}
		if err := json.Unmarshal(f.raw, f.dst); err != nil {
			return nil, fmt.Errorf("error decoding agent state: %w", err)
		}
	}
	return s, nil
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// overBudget names the budget that is used up, or "".
func (s *State) overBudget(running time.Duration) string {
	b := s.Budgets
	switch {
	case s.Iteration >= b.MaxIterations:
		return fmt.Sprintf("iteration budget used up (%d model calls)", b.MaxIterations)
	case s.Spend.Tokens >= b.MaxTokens:
		return fmt.Sprintf("token budget used up (%d of %d tokens)", s.Spend.Tokens, b.MaxTokens)
	case s.Spend.ElapsedMS+running.Milliseconds() >= int64(b.WallClockSeconds)*1000:
		return fmt.Sprintf("wall-clock budget used up (%d s)", b.WallClockSeconds)
	}
	return ""
}
