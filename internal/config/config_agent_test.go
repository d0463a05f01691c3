package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoadAgent(t *testing.T) {
	t.Parallel()

	t.Run("UnsetMeansTheAgentDefaults", func(t *testing.T) {
		t.Parallel()
		c, err := Load(env(nil))
		require.NoError(t, err)
		require.Equal(t, AgentConfig{}, c.Agent)
	})

	t.Run("Values", func(t *testing.T) {
		t.Parallel()
		c, err := Load(env(map[string]string{
			"FLIGHTDECK_AGENT_MAX_ITERATIONS": "7", "FLIGHTDECK_AGENT_MAX_TOKENS": "50000",
			"FLIGHTDECK_AGENT_MAX_TOOL_CALLS": "12", "FLIGHTDECK_AGENT_MAX_WALL": "90s",
			"FLIGHTDECK_LLM_RETRIES": "2", "FLIGHTDECK_LLM_TIMEOUT": "45s",
			"FLIGHTDECK_LLM_BACKOFF": "200ms", "FLIGHTDECK_LLM_BACKOFF_MAX": "5s",
			"FLIGHTDECK_LLM_BREAKER_THRESHOLD": "3", "FLIGHTDECK_LLM_BREAKER_COOLDOWN": "1m",
		}))
		require.NoError(t, err)
		require.Equal(t, AgentConfig{
			MaxIterations: 7, MaxTokens: 50000, MaxToolCalls: 12, MaxWall: 90 * time.Second,
			LLMAttempts: 3, LLMTimeout: 45 * time.Second, LLMBackoff: 200 * time.Millisecond, LLMBackoffMax: 5 * time.Second,
			LLMBreakerThreshold: 3, LLMBreakerCooldown: time.Minute,
		}, c.Agent)
	})

	t.Run("ZeroRetriesMeansOneTry", func(t *testing.T) {
		t.Parallel()
		c, err := Load(env(map[string]string{"FLIGHTDECK_LLM_RETRIES": "0"}))
		require.NoError(t, err)
		require.Equal(t, 1, c.Agent.LLMAttempts)
	})

	t.Run("InvalidValuesAreNamed", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ name, value, want string }{
			{"FLIGHTDECK_AGENT_MAX_ITERATIONS", "0", "from 1 to 1000"},
			{"FLIGHTDECK_AGENT_MAX_ITERATIONS", "1001", "from 1 to 1000"},
			{"FLIGHTDECK_AGENT_MAX_ITERATIONS", "ten", "from 1 to 1000"},
			{"FLIGHTDECK_AGENT_MAX_TOKENS", "-5", "from 1 to 100000000"},
			{"FLIGHTDECK_AGENT_MAX_TOOL_CALLS", "1.5", "from 1 to 10000"},
			{"FLIGHTDECK_AGENT_MAX_WALL", "600", "like 30s"},
			{"FLIGHTDECK_AGENT_MAX_WALL", "500ms", "from 1s to 24h0m0s"},
			{"FLIGHTDECK_AGENT_MAX_WALL", "48h", "from 1s to 24h0m0s"},
			{"FLIGHTDECK_AGENT_MAX_WALL", "1.5s", "whole seconds"},
			{"FLIGHTDECK_LLM_RETRIES", "-1", "from 0 to 20"},
			{"FLIGHTDECK_LLM_RETRIES", "many", "from 0 to 20"},
			{"FLIGHTDECK_LLM_TIMEOUT", "0s", "like 30s"},
			{"FLIGHTDECK_LLM_TIMEOUT", "2h", "like 30s"},
			{"FLIGHTDECK_LLM_BACKOFF", "soon", "like 30s"},
			{"FLIGHTDECK_LLM_BREAKER_THRESHOLD", "0", "from 1 to 1000"},
			{"FLIGHTDECK_LLM_BREAKER_COOLDOWN", "-1s", "like 30s"},
		} {
			_, err := Load(env(map[string]string{tc.name: tc.value}))
			require.Error(t, err, "%s=%s", tc.name, tc.value)
			require.Contains(t, err.Error(), tc.name)
			require.Contains(t, err.Error(), tc.want, "%s=%s", tc.name, tc.value)
		}
		_, err := Load(env(map[string]string{"FLIGHTDECK_LLM_BACKOFF": "10s", "FLIGHTDECK_LLM_BACKOFF_MAX": "1s"}))
		require.ErrorContains(t, err, "FLIGHTDECK_LLM_BACKOFF_MAX (1s) is below FLIGHTDECK_LLM_BACKOFF (10s)")
	})
}
