package config

import (
	"fmt"
	"strconv"
	"time"
)

// AgentConfig tunes agent tasks: the budgets every task gets unless its
// submission sets its own, and how the LLM client retries and breaks its
// circuit. Zero values mean the defaults of workflow/agent, named below.
// A budget set here is also a ceiling: a submission asking for more is
// refused (422), and workers never give a task more. Left unset, a
// submission may ask up to fixed caps (100 iterations, 2000000 tokens,
// 500 tool calls, 1h).
type AgentConfig struct {
	// MaxIterations is the model calls per task
	// (FLIGHTDECK_AGENT_MAX_ITERATIONS, 1..1000, default 20).
	MaxIterations int
	// MaxTokens is the total tokens per task the server may report
	// (FLIGHTDECK_AGENT_MAX_TOKENS, 1..100000000, default 200000).
	MaxTokens int
	// MaxToolCalls per task (FLIGHTDECK_AGENT_MAX_TOOL_CALLS, 1..10000,
	// default 50).
	MaxToolCalls int
	// MaxWall is a task's running time, not counting time spent waiting
	// for people (FLIGHTDECK_AGENT_MAX_WALL, whole seconds from 1s to 24h,
	// default 10m).
	MaxWall time.Duration

	// LLMAttempts is the tries per model call: FLIGHTDECK_LLM_RETRIES
	// (0..20, default 3) plus one.
	LLMAttempts int
	// LLMTimeout bounds one request (FLIGHTDECK_LLM_TIMEOUT, up to 1h,
	// default 2m).
	LLMTimeout time.Duration
	// LLMBackoff is the first wait before a retry, doubling up to
	// LLMBackoffMax, with jitter (FLIGHTDECK_LLM_BACKOFF, default 1s;
	// FLIGHTDECK_LLM_BACKOFF_MAX, default 30s).
	LLMBackoff    time.Duration
	LLMBackoffMax time.Duration
	// LLMBreakerThreshold consecutive failed calls open the circuit
	// breaker (FLIGHTDECK_LLM_BREAKER_THRESHOLD, 1..1000, default 5);
	// calls then fail at once for LLMBreakerCooldown
	// (FLIGHTDECK_LLM_BREAKER_COOLDOWN, up to 1h, default 30s) before one
	// probe may try.
	LLMBreakerThreshold int
	LLMBreakerCooldown  time.Duration
}

// loadAgent reads the agent settings; it returns one message per invalid
// variable.
func loadAgent(getenv func(string) string) (AgentConfig, []string) {
	var errs []string
	intIn := func(name string, lo, hi int) int {
		v := getenv(name)
		if v == "" {
			return 0
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Sprintf("%s: want an integer from %d to %d, got %q", name, lo, hi, v))
			return 0
		}
		return n
	}
	durIn := func(name string, lo, hi time.Duration) time.Duration {
		v := getenv(name)
		if v == "" {
			return 0
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < lo || d > hi {
			errs = append(errs, fmt.Sprintf("%s: want a duration from %s to %s like 30s, got %q", name, lo, hi, v))
			return 0
		}
		return d
	}
	c := AgentConfig{
		MaxIterations:       intIn("FLIGHTDECK_AGENT_MAX_ITERATIONS", 1, 1000),
		MaxTokens:           intIn("FLIGHTDECK_AGENT_MAX_TOKENS", 1, 100_000_000),
		MaxToolCalls:        intIn("FLIGHTDECK_AGENT_MAX_TOOL_CALLS", 1, 10000),
		MaxWall:             durIn("FLIGHTDECK_AGENT_MAX_WALL", time.Second, 24*time.Hour),
		LLMTimeout:          durIn("FLIGHTDECK_LLM_TIMEOUT", time.Millisecond, time.Hour),
		LLMBackoff:          durIn("FLIGHTDECK_LLM_BACKOFF", time.Millisecond, time.Hour),
		LLMBackoffMax:       durIn("FLIGHTDECK_LLM_BACKOFF_MAX", time.Millisecond, time.Hour),
		LLMBreakerThreshold: intIn("FLIGHTDECK_LLM_BREAKER_THRESHOLD", 1, 1000),
		LLMBreakerCooldown:  durIn("FLIGHTDECK_LLM_BREAKER_COOLDOWN", time.Millisecond, time.Hour),
	}
	if c.MaxWall%time.Second != 0 {
		errs = append(errs, fmt.Sprintf("FLIGHTDECK_AGENT_MAX_WALL: want whole seconds, got %q", getenv("FLIGHTDECK_AGENT_MAX_WALL")))
		c.MaxWall = 0
	}
	// Retries may be 0 (no retry), so the variable is read apart from the
	// zero-means-default fields.
	if v := getenv("FLIGHTDECK_LLM_RETRIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 20 {
			errs = append(errs, fmt.Sprintf("FLIGHTDECK_LLM_RETRIES: want an integer from 0 to 20, got %q", v))
		} else {
			c.LLMAttempts = n + 1
		}
	}
	if c.LLMBackoff > 0 && c.LLMBackoffMax > 0 && c.LLMBackoffMax < c.LLMBackoff {
		errs = append(errs, fmt.Sprintf("FLIGHTDECK_LLM_BACKOFF_MAX (%s) is below FLIGHTDECK_LLM_BACKOFF (%s)", c.LLMBackoffMax, c.LLMBackoff))
	}
	return c, errs
}
