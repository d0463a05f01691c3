package sso_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/config"
	"flightdeck/internal/oidctest"
	"flightdeck/internal/sso"
)

func TestNewReadsDiscovery(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t, "flightdeck", "secret")
	c, err := sso.New(t.Context(), config.OIDCConfig{Issuer: p.Issuer, ClientID: "flightdeck"}, "http://127.0.0.1:1/login/oidc/callback")
	require.NoError(t, err)
	require.Contains(t, c.AuthURL(sso.NewSecrets()), p.Issuer+"/authorize?")
}

// TestNewFailsWithoutProvider: serve stops at start when the discovery
// document cannot be read.
func TestNewFailsWithoutProvider(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	issuer := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	_, err = sso.New(t.Context(), config.OIDCConfig{Issuer: issuer, ClientID: "flightdeck"}, "http://127.0.0.1:1/cb")
	require.ErrorContains(t, err, "error reading the discovery document of "+issuer)
}
