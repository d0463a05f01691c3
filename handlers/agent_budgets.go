package handlers

import "encoding/json"

// agentBudgets are an agent submission's own budgets (each optional; the
// server's defaults fill the rest). They are kept in the task's params.
type agentBudgets struct {
	MaxIterations    *int `json:"max_iterations"`
	MaxTokens        *int `json:"max_tokens"`
	MaxToolCalls     *int `json:"max_tool_calls"`
	WallClockSeconds *int `json:"wall_clock_seconds"`
}

func (b *agentBudgets) validate() (json.RawMessage, error) {
	out := map[string]int{}
	for _, f := range []struct {
		name string
		v    *int
		max  int
	}{{"max_iterations", b.MaxIterations, 100}, {"max_tokens", b.MaxTokens, 2_000_000},
		{"max_tool_calls", b.MaxToolCalls, 500}, {"wall_clock_seconds", b.WallClockSeconds, 3600}} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 || *f.v > f.max {
			return nil, errInvalid("budgets."+f.name, "budgets.%s must be between 1 and %d", f.name, f.max)
		}
		out[f.name] = *f.v
	}
	return json.Marshal(map[string]any{"budgets": out})
}
