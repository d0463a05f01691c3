package handlers

import (
	"encoding/json"
	"time"

	"flightdeck/internal/config"
)

// agentBudgets are an agent submission's own budgets (each optional; the
// server's defaults fill the rest). They are kept in the task's params.
type agentBudgets struct {
	MaxIterations    *int `json:"max_iterations"`
	MaxTokens        *int `json:"max_tokens"`
	MaxToolCalls     *int `json:"max_tool_calls"`
	WallClockSeconds *int `json:"wall_clock_seconds"`
}

// validate checks each budget against its ceiling: the server's value
// (FLIGHTDECK_AGENT_MAX_*) when the operator set one, else a fixed cap.
// Asking for more is refused rather than clamped, so nobody is surprised
// by a task that stops earlier than they asked.
func (b *agentBudgets) validate(server config.AgentConfig) (json.RawMessage, error) {
	out := map[string]int{}
	for _, f := range []struct {
		name         string
		v            *int
		ceiling, cap int
	}{
		{"max_iterations", b.MaxIterations, server.MaxIterations, 100},
		{"max_tokens", b.MaxTokens, server.MaxTokens, 2_000_000},
		{"max_tool_calls", b.MaxToolCalls, server.MaxToolCalls, 500},
		{"wall_clock_seconds", b.WallClockSeconds, int(server.MaxWall / time.Second), 3600},
	} {
		if f.v == nil {
			continue
		}
		limit, whose := f.cap, ""
		if f.ceiling > 0 {
			limit, whose = f.ceiling, " (this server's limit)"
		}
		if *f.v < 1 || *f.v > limit {
			return nil, errInvalid("budgets."+f.name, "budgets.%s must be between 1 and %d%s", f.name, limit, whose)
		}
		out[f.name] = *f.v
	}
	return json.Marshal(map[string]any{"budgets": out})
}
