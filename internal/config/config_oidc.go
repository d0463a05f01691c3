package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"flightdeck/internal/auth"
	"flightdeck/workflow/task"
)

// OIDCConfig is single sign-on with an OpenID Connect provider (contract
// section 8). Issuer "" turns it off.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL (FLIGHTDECK_OIDC_ISSUER); its
	// discovery document is read when serve starts.
	Issuer       string
	ClientID     string // FLIGHTDECK_OIDC_CLIENT_ID, required with an issuer
	ClientSecret string // FLIGHTDECK_OIDC_CLIENT_SECRET, "" for a public client (PKCE alone)
	// AutoJoinTeam and AutoJoinRole (FLIGHTDECK_OIDC_AUTO_JOIN=team:role) are
	// where a person with a verified email but no account lands; unset, such
	// a person is refused.
	AutoJoinTeam string
	AutoJoinRole auth.Role
}

// Enabled: the login page offers single sign-on.
func (o OIDCConfig) Enabled() bool { return o.Issuer != "" }

// OIDCCallbackPath is where the provider sends the browser back
// (FLIGHTDECK_BASE_URL + this is the redirect URI to register).
const OIDCCallbackPath = "/login/oidc/callback"

// OIDCRedirectURL is the redirect URI registered with the provider.
func (c Config) OIDCRedirectURL() string { return c.PublicURL() + OIDCCallbackPath }

func loadOIDC(getenv func(string) string) (OIDCConfig, []string) {
	var errs []string
	o := OIDCConfig{
		Issuer:       strings.TrimSpace(getenv("FLIGHTDECK_OIDC_ISSUER")),
		ClientID:     strings.TrimSpace(getenv("FLIGHTDECK_OIDC_CLIENT_ID")),
		ClientSecret: getenv("FLIGHTDECK_OIDC_CLIENT_SECRET"),
	}
	if o.Issuer != "" {
		if err := validIssuer(o.Issuer); err != nil {
			errs = append(errs, fmt.Sprintf("FLIGHTDECK_OIDC_ISSUER: %v, got %q", err, o.Issuer))
		}
		if o.ClientID == "" {
			errs = append(errs, "FLIGHTDECK_OIDC_CLIENT_ID: required when FLIGHTDECK_OIDC_ISSUER is set")
		}
	}
	if v := strings.TrimSpace(getenv("FLIGHTDECK_OIDC_AUTO_JOIN")); v != "" {
		team, role, ok := strings.Cut(v, ":")
		r, err := task.ParseRole(role)
		switch {
		case !ok || !auth.ValidTeamName(team):
			errs = append(errs, fmt.Sprintf("FLIGHTDECK_OIDC_AUTO_JOIN: want team:role (a team of lowercase letters, digits and dashes), got %q", v))
		case err != nil:
			errs = append(errs, fmt.Sprintf("FLIGHTDECK_OIDC_AUTO_JOIN: %v", err))
		case o.Issuer == "":
			errs = append(errs, "FLIGHTDECK_OIDC_AUTO_JOIN: needs FLIGHTDECK_OIDC_ISSUER")
		default:
			o.AutoJoinTeam, o.AutoJoinRole = team, r
		}
	}
	if v := getenv("FLIGHTDECK_BASE_URL"); v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Sprintf("FLIGHTDECK_BASE_URL: want an absolute http(s) URL, got %q", v))
		}
	}
	return o, errs
}

// validIssuer: an absolute https URL without query or fragment (the
// provider's identity); plain http only on a loopback host, for a provider
// on this machine.
func validIssuer(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("want an absolute https URL without query or fragment")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("want https (http only on a loopback host)")
	}
	return fmt.Errorf("want an absolute https URL")
}
