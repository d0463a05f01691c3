// Package sso signs people in with an OpenID Connect provider: the
// authorization code flow with PKCE (contract section 8). It is the only
// importer of go-oidc and x/oauth2. It knows nothing of sessions, users or
// cookies: it builds the provider's URL and turns a code into a verified
// email; the handlers decide who that is.
package sso

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"flightdeck/internal/config"
)

// Why a sign-in was refused. Each is the provider's or the browser's
// doing, never flightdeck's fault (the handlers answer 4xx).
var (
	ErrCodeRefused = errors.New("the provider refused the authorization code")
	ErrInvalid     = errors.New("the ID token is not valid")
	ErrExpired     = errors.New("the ID token has expired")
	ErrNonce       = errors.New("the ID token's nonce does not match this sign-in")
	ErrUnverified  = errors.New("the provider has not verified the email address")
	// ErrUnreachable: the provider did not answer (timeout, network, 5xx).
	ErrUnreachable = errors.New("the identity provider did not answer")
)

// httpTimeout bounds each call to the provider.
const httpTimeout = 10 * time.Second

// Client talks to one provider for one client registration.
type Client struct {
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
	http     *http.Client
}

// New reads the provider's discovery document (at start: a provider that
// cannot be read stops serve).
func New(ctx context.Context, cfg config.OIDCConfig, redirectURL string) (*Client, error) {
	hc := &http.Client{Timeout: httpTimeout}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, hc), httpTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(ctx, cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("error reading the discovery document of %s: %w", cfg.Issuer, err)
	}
	return &Client{
		oauth: oauth2.Config{
			ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RedirectURL: redirectURL,
			Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email"},
		},
		verifier: provider.VerifierContext(oidc.ClientContext(context.WithoutCancel(ctx), hc), &oidc.Config{ClientID: cfg.ClientID}),
		http:     hc,
	}, nil
}

// Secrets are one sign-in's random values, kept by the browser (an
// HttpOnly cookie) between AuthURL and Identify.
type Secrets struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
}

// NewSecrets draws a sign-in's state, nonce and PKCE verifier.
func NewSecrets() Secrets {
	return Secrets{State: oauth2.GenerateVerifier(), Nonce: oauth2.GenerateVerifier(), Verifier: oauth2.GenerateVerifier()}
}

// AuthURL is where the browser goes to sign in at the provider.
func (c *Client) AuthURL(s Secrets) string {
	return c.oauth.AuthCodeURL(s.State, oidc.Nonce(s.Nonce), oauth2.S256ChallengeOption(s.Verifier))
}

// Identify redeems the code (with the PKCE verifier), verifies the ID
// token (signature, issuer, audience, expiry) and its nonce, and returns
// the email the provider vouches for.
func (c *Client) Identify(ctx context.Context, code string, s Secrets) (string, error) {
	ctx = oidc.ClientContext(ctx, c.http)
	tok, err := c.oauth.Exchange(ctx, code, oauth2.VerifierOption(s.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
			return "", fmt.Errorf("%w: %s", ErrCodeRefused, cmp.Or(re.ErrorCode, re.Response.Status))
		}
		return "", fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return "", fmt.Errorf("%w: the token response has no id_token", ErrInvalid)
	}
	idt, err := c.verifier.Verify(ctx, raw)
	if err != nil {
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			return "", ErrExpired
		}
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if idt.Nonce != s.Nonce {
		return "", ErrNonce
	}
	var claims struct {
		Email    string          `json:"email"`
		Verified json.RawMessage `json:"email_verified"`
	}
	if err := idt.Claims(&claims); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	// Some providers send the flag as a string; missing means unverified.
	if v := string(claims.Verified); claims.Email == "" || v != "true" && v != `"true"` {
		return claims.Email, ErrUnverified
	}
	return claims.Email, nil
}
