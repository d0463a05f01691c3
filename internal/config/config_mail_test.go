package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoadMail(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.False(t, c.Mail.Enabled(), "unset: no email")

	c, err = Load(env(map[string]string{"FLIGHTDECK_SMTP_URL": "smtp://ops:s3cr%40t-pass@127.0.0.1:2525",
		"FLIGHTDECK_SMTP_FROM": "flightdeck <flightdeck@example.com>", "FLIGHTDECK_SMTP_TIMEOUT": "5s"}))
	require.NoError(t, err)
	require.Equal(t, MailConfig{Host: "127.0.0.1", Port: 2525, Username: "ops", Password: "s3cr@t-pass",
		From: `"flightdeck" <flightdeck@example.com>`, Timeout: 5 * time.Second}, c.Mail)
	require.Contains(t, c.SecretValues(), "s3cr@t-pass", "the SMTP password is redacted like every secret")

	c, err = Load(env(map[string]string{"FLIGHTDECK_SMTP_URL": "smtps://127.0.0.1", "FLIGHTDECK_SMTP_FROM": "ops@example.com"}))
	require.NoError(t, err)
	require.True(t, c.Mail.TLS)
	require.Equal(t, 465, c.Mail.Port)

	for _, tc := range []struct{ url, from, want string }{
		{"http://127.0.0.1:25", "ops@example.com", "FLIGHTDECK_SMTP_URL"},
		{"smtp://", "ops@example.com", "FLIGHTDECK_SMTP_URL"},
		{"smtp://127.0.0.1:99999", "ops@example.com", "FLIGHTDECK_SMTP_URL"},
		{"smtp://127.0.0.1:25/path", "ops@example.com", "FLIGHTDECK_SMTP_URL"},
		{"smtp://127.0.0.1:25", "", "FLIGHTDECK_SMTP_FROM"},
		{"smtp://127.0.0.1:25", "not an address", "FLIGHTDECK_SMTP_FROM"},
		{"smtp://127.0.0.1:25", "ops@example.com\r\nBcc: x@example.com", "FLIGHTDECK_SMTP_FROM"},
		{"", "ops@example.com", "FLIGHTDECK_SMTP_FROM"},
	} {
		_, err := Load(env(map[string]string{"FLIGHTDECK_SMTP_URL": tc.url, "FLIGHTDECK_SMTP_FROM": tc.from}))
		require.Error(t, err, tc)
		require.Contains(t, err.Error(), tc.want)
		require.NotContains(t, err.Error(), "s3cr", "the URL (and its password) is never quoted")
	}
	_, err = Load(env(map[string]string{"FLIGHTDECK_SMTP_URL": "smtp://u:s3cret@127.0.0.1:bad", "FLIGHTDECK_SMTP_FROM": "ops@example.com"}))
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cret")
}
