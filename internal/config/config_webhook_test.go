package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoadWebhook(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.Empty(t, c.WebhookAllow)
	require.Empty(t, c.WebhookSchedule, "zero: the webhook package's default schedule")

	c, err = Load(env(map[string]string{
		"FLIGHTDECK_WEBHOOK_ALLOW": "127.0.0.1, hooks.internal,10.0.0.0/8", "FLIGHTDECK_WEBHOOK_SCHEDULE": "5ms, 10ms",
		"FLIGHTDECK_WEBHOOK_EVERY": "20ms", "FLIGHTDECK_WEBHOOK_MAX_AGE": "1m", "FLIGHTDECK_WEBHOOK_TIMEOUT": "2s",
	}))
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1", "hooks.internal", "10.0.0.0/8"}, c.WebhookAllow)
	require.Equal(t, []time.Duration{5 * time.Millisecond, 10 * time.Millisecond}, c.WebhookSchedule)
	require.Equal(t, 20*time.Millisecond, c.WebhookEvery)
	require.Equal(t, time.Minute, c.WebhookMaxAge)
	require.Equal(t, 2*time.Second, c.WebhookTimeout)

	for _, kv := range [][2]string{
		{"FLIGHTDECK_WEBHOOK_SCHEDULE", "5s,soon"}, {"FLIGHTDECK_WEBHOOK_SCHEDULE", "-1s"},
		{"FLIGHTDECK_WEBHOOK_EVERY", "0s"}, {"FLIGHTDECK_WEBHOOK_TIMEOUT", "x"},
	} {
		_, err := Load(env(map[string]string{kv[0]: kv[1]}))
		require.Error(t, err, kv)
		require.Contains(t, err.Error(), kv[0])
	}
}
