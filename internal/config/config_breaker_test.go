package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoadHTTPBreaker(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.Zero(t, c.HTTPBreakerThreshold, "zero: internal/breaker's defaults")
	require.Zero(t, c.HTTPBreakerCooldown)
	require.Zero(t, c.HTTPBreakerSuccesses)

	c, err = Load(env(map[string]string{"FLIGHTDECK_HTTP_BREAKER_THRESHOLD": "3",
		"FLIGHTDECK_HTTP_BREAKER_COOLDOWN": "50ms", "FLIGHTDECK_HTTP_BREAKER_SUCCESSES": "1"}))
	require.NoError(t, err)
	require.Equal(t, 3, c.HTTPBreakerThreshold)
	require.Equal(t, 50*time.Millisecond, c.HTTPBreakerCooldown)
	require.Equal(t, 1, c.HTTPBreakerSuccesses)

	for _, kv := range [][2]string{
		{"FLIGHTDECK_HTTP_BREAKER_THRESHOLD", "0"}, {"FLIGHTDECK_HTTP_BREAKER_COOLDOWN", "soon"},
		{"FLIGHTDECK_HTTP_BREAKER_SUCCESSES", "-1"},
	} {
		_, err := Load(env(map[string]string{kv[0]: kv[1]}))
		require.Error(t, err, kv)
		require.Contains(t, err.Error(), kv[0])
	}
}
