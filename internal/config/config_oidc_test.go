package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
)

func TestLoadOIDC(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.False(t, c.OIDC.Enabled(), "off unless an issuer is set")

	c, err = Load(env(map[string]string{
		"FLIGHTDECK_OIDC_ISSUER": "https://id.example.com/realms/acme", "FLIGHTDECK_OIDC_CLIENT_ID": "flightdeck",
		"FLIGHTDECK_OIDC_CLIENT_SECRET": "s3cret-s3cret", "FLIGHTDECK_OIDC_AUTO_JOIN": "acme:viewer",
		"FLIGHTDECK_BASE_URL": "https://deploy.example.com/",
	}))
	require.NoError(t, err)
	require.True(t, c.OIDC.Enabled())
	require.Equal(t, OIDCConfig{Issuer: "https://id.example.com/realms/acme", ClientID: "flightdeck", ClientSecret: "s3cret-s3cret",
		AutoJoinTeam: "acme", AutoJoinRole: auth.RoleViewer}, c.OIDC)
	require.Equal(t, "https://deploy.example.com/login/oidc/callback", c.OIDCRedirectURL())
	require.Contains(t, c.SecretValues(), "s3cret-s3cret", "the client secret is redacted from step output")

	c, err = Load(env(map[string]string{"FLIGHTDECK_OIDC_ISSUER": "http://127.0.0.1:18735", "FLIGHTDECK_OIDC_CLIENT_ID": "x"}))
	require.NoError(t, err, "plain http on a loopback host (a provider on this machine)")
	require.Empty(t, c.OIDC.AutoJoinTeam)
}

func TestLoadOIDCRefusesBadValues(t *testing.T) {
	t.Parallel()
	ok := map[string]string{"FLIGHTDECK_OIDC_ISSUER": "https://id.example.com", "FLIGHTDECK_OIDC_CLIENT_ID": "flightdeck"}
	for _, tc := range []struct{ name, key, value, want string }{
		{"IssuerNotAURL", "FLIGHTDECK_OIDC_ISSUER", "id.example.com", "FLIGHTDECK_OIDC_ISSUER"},
		{"IssuerPlainHTTP", "FLIGHTDECK_OIDC_ISSUER", "http://id.example.com", "FLIGHTDECK_OIDC_ISSUER"},
		{"IssuerWithQuery", "FLIGHTDECK_OIDC_ISSUER", "https://id.example.com/?x=1", "FLIGHTDECK_OIDC_ISSUER"},
		{"NoClientID", "FLIGHTDECK_OIDC_CLIENT_ID", "", "FLIGHTDECK_OIDC_CLIENT_ID"},
		{"AutoJoinNoRole", "FLIGHTDECK_OIDC_AUTO_JOIN", "acme", "FLIGHTDECK_OIDC_AUTO_JOIN"},
		{"AutoJoinBadRole", "FLIGHTDECK_OIDC_AUTO_JOIN", "acme:owner", "FLIGHTDECK_OIDC_AUTO_JOIN"},
		{"AutoJoinBadTeam", "FLIGHTDECK_OIDC_AUTO_JOIN", "Acme Corp:viewer", "FLIGHTDECK_OIDC_AUTO_JOIN"},
		{"BaseURLNotAURL", "FLIGHTDECK_BASE_URL", "deploy.example.com", "FLIGHTDECK_BASE_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := map[string]string{}
			for k, v := range ok {
				m[k] = v
			}
			m[tc.key] = tc.value
			_, err := Load(env(m))
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := Load(env(map[string]string{"FLIGHTDECK_OIDC_AUTO_JOIN": "acme:viewer"}))
	require.ErrorContains(t, err, "FLIGHTDECK_OIDC_AUTO_JOIN: needs FLIGHTDECK_OIDC_ISSUER")
}
