package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.Equal(t, AddrDefault, c.Addr)
	require.Equal(t, WorkersDefault, c.Workers)
	require.Equal(t, MaxPendingDefault, c.MaxPending)
	require.True(t, c.Migrate)
	require.False(t, c.Dev)
	require.Equal(t, DashboardCoalesceDefault, c.DashboardCoalesce)
	require.Equal(t, DashboardRefreshDefault, c.DashboardRefresh)
	require.Equal(t, "http://localhost:8080", c.PublicURL())
}

func TestLoadValues(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{
		"FLIGHTDECK_WORKERS": "3", "FLIGHTDECK_DEV": "1", "FLIGHTDECK_LEASE": "2s",
		"FLIGHTDECK_ALLOWED_ORIGINS": "https://a.test, https://b.test", "FLIGHTDECK_ADDR": "127.0.0.1:9000",
		"FLIGHTDECK_WEBHOOK_DELIVERY_RETENTION": "720h", "FLIGHTDECK_LOCAL_EFFECT_RETENTION": "48h", "FLIGHTDECK_CLEANUP_INTERVAL": "1m",
		"FLIGHTDECK_DASHBOARD_COALESCE": "50ms", "FLIGHTDECK_DASHBOARD_REFRESH": "1m",
	}))
	require.NoError(t, err)
	require.Equal(t, 3, c.Workers)
	require.True(t, c.Dev)
	require.Equal(t, 2*time.Second, c.Lease)
	require.Equal(t, []string{"https://a.test", "https://b.test"}, c.AllowedOrigins)
	require.Equal(t, "http://127.0.0.1:9000", c.PublicURL())
	require.Equal(t, 720*time.Hour, c.WebhookDeliveryRetention)
	require.Equal(t, 48*time.Hour, c.LocalEffectRetention)
	require.Equal(t, time.Minute, c.CleanupInterval)
	require.Equal(t, 50*time.Millisecond, c.DashboardCoalesce)
	require.Equal(t, time.Minute, c.DashboardRefresh)
}

func TestLoadInvalid(t *testing.T) {
	t.Parallel()
	for _, kv := range [][2]string{
		{"FLIGHTDECK_WORKERS", "zero"}, {"FLIGHTDECK_WORKERS", "-1"}, {"FLIGHTDECK_GRACE", "soon"},
		{"FLIGHTDECK_API_RATE", "0"}, {"FLIGHTDECK_LOCAL_EFFECT_RETENTION", "-1h"}, {"FLIGHTDECK_CLEANUP_INTERVAL", "often"},
	} {
		_, err := Load(env(map[string]string{kv[0]: kv[1]}))
		require.Error(t, err, kv[0])
		require.Contains(t, err.Error(), kv[0])
	}
	c, _ := Load(env(nil))
	c.Role = "both"
	require.Error(t, c.Validate())
}

// TestSecretValues: the values redacted from outputs are those of
// FLIGHTDECK_SECRET_ENV's variables and flightdeck's own secrets (the
// database password taken out of its URL), never trivially short ones.
func TestSecretValues(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{
		"FLIGHTDECK_SECRET_ENV": "VAULT_TOKEN,EMPTY", "VAULT_TOKEN": "vault-token-value",
		"DATABASE_URL":   "postgres://app:db%2Fpassword-1@db.internal:5432/flightdeck",
		"OPENAI_API_KEY": "sk-openai-key", "FLIGHTDECK_DEV_PASSWORD": "dev-password", "FLIGHTDECK_TOKEN": "x",
	}))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"vault-token-value", "postgres://app:db%2Fpassword-1@db.internal:5432/flightdeck",
		"sk-openai-key", "dev-password", "db/password-1"}, c.SecretValues())
	c = c.WithSecrets("generated-password", "short", "")
	require.Contains(t, c.SecretValues(), "generated-password")
	require.NotContains(t, c.SecretValues(), "short")
}

func TestLoadFailSafeSettings(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.Equal(t, RequestTimeoutDefault, c.RequestTimeout)
	require.Equal(t, ReadTimeoutDefault, c.ReadTimeout)
	require.Equal(t, WSAuthCheckDefault, c.WSAuthCheck)
	require.False(t, c.DBDurabilityOff, "durable by default")
	c, err = Load(env(map[string]string{"FLIGHTDECK_REQUEST_TIMEOUT": "5s", "FLIGHTDECK_DB_DURABILITY": "off",
		"FLIGHTDECK_LOGIN_ACCOUNT_FAILURES": "3", "FLIGHTDECK_LOGIN_FAILURE_WINDOW": "1m"}))
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, c.RequestTimeout)
	require.True(t, c.DBDurabilityOff)
	require.Equal(t, 3, c.LoginAccountFailures)
	require.Equal(t, time.Minute, c.LoginFailureWindow)
	_, err = Load(env(map[string]string{"FLIGHTDECK_DB_DURABILITY": "maybe"}))
	require.ErrorContains(t, err, "FLIGHTDECK_DB_DURABILITY")
}
