package handlers_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/handlers"
	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/internal/oidctest"
	"flightdeck/internal/sso"
	"flightdeck/store"
)

const ssoClientID, ssoSecret = "flightdeck-test", "fake-provider-client-secret"

// setupSSO is a server whose single sign-on goes to a fake provider
// started for the test; autoJoin is FLIGHTDECK_OIDC_AUTO_JOIN ("" for none).
func setupSSO(t *testing.T, autoJoin string) *testBundle {
	t.Helper()
	p := oidctest.Start(t, ssoClientID, ssoSecret)
	env := map[string]string{"FLIGHTDECK_OIDC_ISSUER": p.Issuer, "FLIGHTDECK_OIDC_CLIENT_ID": ssoClientID,
		"FLIGHTDECK_OIDC_CLIENT_SECRET": ssoSecret, "FLIGHTDECK_OIDC_AUTO_JOIN": autoJoin}
	oidcCfg, err := config.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	return setupDeps(t, func(c *config.Config) { c.OIDC = oidcCfg.OIDC }, nil, func(d *handlers.Deps, baseURL string) {
		d.Config.BaseURL = baseURL
		client, err := sso.New(t.Context(), d.Config.OIDC, d.Config.OIDCRedirectURL())
		require.NoError(t, err)
		d.SSO = client
	})
}

// ssoFlow is one sign-in through the fake provider in one browser.
type ssoFlow struct {
	b       *testBundle
	c       *http.Client
	authURL *url.URL // the provider's authorize request, as flightdeck built it
}

// ssoStart clicks "Sign in with SSO": flightdeck sends the browser to the
// provider.
func (b *testBundle) ssoStart(t *testing.T, next string) *ssoFlow {
	t.Helper()
	c := b.browser(t)
	path := "/login/oidc"
	if next != "" {
		path += "?next=" + url.QueryEscape(next)
	}
	res, _ := b.get(t, c, path, nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	u, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	return &ssoFlow{b: b, c: c, authURL: u}
}

// authorize signs in at the provider as email (with the fake's knobs) and
// returns the callback URL the provider sends the browser back to.
func (f *ssoFlow) authorize(t *testing.T, email string, knobs url.Values) *url.URL {
	t.Helper()
	u := *f.authURL
	q := u.Query()
	q.Set("email", email)
	for k, vs := range knobs {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u.String(), nil)
	require.NoError(t, err)
	res, err := f.c.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusFound, res.StatusCode)
	back, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, f.b.srv.URL+"/login/oidc/callback", back.Scheme+"://"+back.Host+back.Path)
	return back
}

// callback follows the provider's redirect back into flightdeck: the
// status, the Location and the refusal page's message.
func (f *ssoFlow) callback(t *testing.T, c *http.Client, back *url.URL) (int, string, string) {
	t.Helper()
	res, body := f.b.get(t, c, back.Path+"?"+back.RawQuery, nil)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	return res.StatusCode, res.Header.Get("Location"), strings.TrimSpace(doc.Find(`[data-testid="error-page"] p.muted`).First().Text())
}

// me is who the browser is signed in as, and in which teams ("" when not).
func (b *testBundle) me(t *testing.T, c *http.Client) (string, map[string]string) {
	t.Helper()
	res, body := b.get(t, c, "/api/v1/me", nil)
	if res.StatusCode != http.StatusOK {
		return "", nil
	}
	var me struct {
		Email string `json:"email"`
		Teams []struct{ Name, Role string }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &me))
	teams := map[string]string{}
	for _, tm := range me.Teams {
		teams[tm.Name] = tm.Role
	}
	return me.Email, teams
}

func TestLoginOIDC(t *testing.T) {
	t.Parallel()
	b := setupSSO(t, "")

	t.Run("LoginPageOffersSSO", func(t *testing.T) {
		_, body := b.get(t, b.browser(t), "/login?next=/pipelines", nil)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		href, ok := doc.Find(`[data-testid="login-sso"]`).Attr("href")
		require.True(t, ok, "Sign in with SSO is offered")
		require.Equal(t, "/login/oidc?next=%2Fpipelines", href)
	})
	t.Run("AuthorizeRequestUsesPKCEAndNonce", func(t *testing.T) {
		f := b.ssoStart(t, "")
		q := f.authURL.Query()
		require.Equal(t, "code", q.Get("response_type"))
		require.Equal(t, ssoClientID, q.Get("client_id"))
		require.Equal(t, b.srv.URL+"/login/oidc/callback", q.Get("redirect_uri"))
		require.Equal(t, "S256", q.Get("code_challenge_method"))
		require.NotEmpty(t, q.Get("code_challenge"))
		require.NotEmpty(t, q.Get("nonce"))
		require.NotEmpty(t, q.Get("state"))
		require.Contains(t, q.Get("scope"), "openid")
	})
	t.Run("VerifiedEmailSignsTheUserIn", func(t *testing.T) {
		f := b.ssoStart(t, "/pipelines?x=1")
		back := f.authorize(t, "Alice@Acme.test", nil)
		status, loc, msg := f.callback(t, f.c, back)
		require.Equal(t, http.StatusSeeOther, status, msg)
		require.Equal(t, "/pipelines?x=1", loc, "same-site next is honoured")
		email, teams := b.me(t, f.c)
		require.Equal(t, "alice@acme.test", email)
		require.Equal(t, map[string]string{"acme": "deployer"}, teams, "with her teams and roles")

		// The answer is used once: the sign-in's cookie is gone.
		c2 := b.browser(t)
		status, _, msg = f.callback(t, c2, back)
		require.Equal(t, http.StatusBadRequest, status)
		require.Contains(t, msg, "not started in this browser")
	})
	t.Run("ForeignNextStaysOnSite", func(t *testing.T) {
		f := b.ssoStart(t, "//evil.example/x")
		status, loc, _ := f.callback(t, f.c, f.authorize(t, "bob@rival.test", nil))
		require.Equal(t, http.StatusSeeOther, status)
		require.Equal(t, "/tasks", loc)
	})
	t.Run("ForgedStateIsRefused", func(t *testing.T) {
		f := b.ssoStart(t, "")
		back := f.authorize(t, "alice@acme.test", nil)
		q := back.Query()
		q.Set("state", "forged-"+q.Get("state"))
		back.RawQuery = q.Encode()
		status, _, msg := f.callback(t, f.c, back)
		require.Equal(t, http.StatusBadRequest, status)
		require.Contains(t, msg, "does not belong to the sign-in this browser started")
		require.False(t, b.signedIn(t, f.c))
	})
	t.Run("AnotherBrowsersAnswerIsRefused", func(t *testing.T) {
		f := b.ssoStart(t, "")
		back := f.authorize(t, "alice@acme.test", nil)
		other := b.ssoStart(t, "") // a browser with a sign-in of its own
		status, _, msg := f.callback(t, other.c, back)
		require.Equal(t, http.StatusBadRequest, status)
		require.Contains(t, msg, "does not belong")
		require.False(t, b.signedIn(t, other.c))
	})
	t.Run("WrongNonceIsRefused", func(t *testing.T) {
		f := b.ssoStart(t, "")
		status, _, msg := f.callback(t, f.c, f.authorize(t, "alice@acme.test", url.Values{"id_token": {"wrong_nonce"}}))
		require.Equal(t, http.StatusUnauthorized, status)
		require.Contains(t, msg, "not issued for this sign-in")
		require.False(t, b.signedIn(t, f.c))
	})
	t.Run("ExpiredIDTokenIsRefused", func(t *testing.T) {
		f := b.ssoStart(t, "")
		status, _, msg := f.callback(t, f.c, f.authorize(t, "alice@acme.test", url.Values{"id_token": {"expired"}}))
		require.Equal(t, http.StatusUnauthorized, status)
		require.Contains(t, msg, "expired")
		require.False(t, b.signedIn(t, f.c))
	})
	t.Run("UnverifiedEmailIsRefused", func(t *testing.T) {
		for _, v := range []string{"false", "missing"} {
			f := b.ssoStart(t, "")
			status, _, msg := f.callback(t, f.c, f.authorize(t, "alice@acme.test", url.Values{"email_verified": {v}}))
			require.Equal(t, http.StatusForbidden, status, v)
			require.Contains(t, msg, "has not verified the email address alice@acme.test", v)
			require.False(t, b.signedIn(t, f.c))
		}
	})
	t.Run("UnknownEmailIsRefused", func(t *testing.T) {
		f := b.ssoStart(t, "")
		status, _, msg := f.callback(t, f.c, f.authorize(t, "carol@elsewhere.test", nil))
		require.Equal(t, http.StatusForbidden, status)
		require.Contains(t, msg, "There is no flightdeck account for carol@elsewhere.test")
		_, _, err := b.store.UserGetByEmail(t.Context(), "carol@elsewhere.test")
		require.Error(t, err, "nobody was created")
	})
	t.Run("PKCEVerifierMismatchIsRefused", func(t *testing.T) {
		// Someone who got hold of the code without this browser's verifier:
		// the provider bound the code to another challenge.
		f := b.ssoStart(t, "")
		sum := sha256.Sum256([]byte("a verifier flightdeck never saw, long enough to be valid"))
		q := f.authURL.Query()
		q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
		f.authURL.RawQuery = q.Encode()
		status, _, msg := f.callback(t, f.c, f.authorize(t, "alice@acme.test", nil))
		require.Equal(t, http.StatusUnauthorized, status)
		require.Contains(t, msg, "refused this sign-in's code")
		require.False(t, b.signedIn(t, f.c))
	})
	t.Run("ProviderErrorIsAClearPage", func(t *testing.T) {
		f := b.ssoStart(t, "")
		back, err := url.Parse(b.srv.URL + "/login/oidc/callback?error=access_denied&state=" + f.authURL.Query().Get("state"))
		require.NoError(t, err)
		status, _, msg := f.callback(t, f.c, back)
		require.Equal(t, http.StatusForbidden, status)
		require.Contains(t, msg, "did not sign you in (access_denied)")
	})
	t.Run("PasswordsAndTokensStillWork", func(t *testing.T) {
		c := b.browser(t)
		res := b.login(t, c, "alice@acme.test", testPassword)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		r := b.api(t, "GET", "/api/v1/me", b.bobToken, "", nil)
		require.Equal(t, http.StatusOK, r.status)
	})
}

func TestLoginOIDCWithoutSSO(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	_, body := b.get(t, c, "/login", nil)
	require.NotContains(t, body, `data-testid="login-sso"`)
	res, _ := b.get(t, c, "/login/oidc", nil)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	res, _ = b.get(t, c, "/login/oidc/callback?code=x&state=y", nil)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}

func TestLoginOIDCAutoJoin(t *testing.T) {
	t.Parallel()
	b := setupSSO(t, "newcomers:viewer")

	f := b.ssoStart(t, "")
	status, loc, msg := f.callback(t, f.c, f.authorize(t, "carol@elsewhere.test", nil))
	require.Equal(t, http.StatusSeeOther, status, msg)
	require.Equal(t, "/tasks", loc)
	email, teams := b.me(t, f.c)
	require.Equal(t, "carol@elsewhere.test", email)
	require.Equal(t, map[string]string{"newcomers": "viewer"}, teams, "the new user joined the auto-join team with its role")
	u, hash, err := b.store.UserGetByEmail(t.Context(), "carol@elsewhere.test")
	require.NoError(t, err)
	require.Empty(t, hash, "no password")
	var audits int
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM audit_log WHERE action = 'user.auto_joined' AND actor = $1`, u.Email).Scan(&audits))
	require.Equal(t, 1, audits)

	// Her second sign-in finds the account; an admin's later change stands.
	_, err = b.store.UserAdd(t.Context(), store.UserAddParams{Email: "carol@elsewhere.test", Team: "newcomers", Role: auth.RoleApprover})
	require.NoError(t, err)
	f = b.ssoStart(t, "")
	status, _, msg = f.callback(t, f.c, f.authorize(t, "carol@elsewhere.test", nil))
	require.Equal(t, http.StatusSeeOther, status, msg)
	_, teams = b.me(t, f.c)
	require.Equal(t, map[string]string{"newcomers": "approver"}, teams)

	// An existing user keeps their teams: auto-join is for people with no account.
	f = b.ssoStart(t, "")
	status, _, msg = f.callback(t, f.c, f.authorize(t, "alice@acme.test", nil))
	require.Equal(t, http.StatusSeeOther, status, msg)
	_, teams = b.me(t, f.c)
	require.Equal(t, map[string]string{"acme": "deployer"}, teams)

	// Unverified is refused before anyone is created.
	f = b.ssoStart(t, "")
	status, _, _ = f.callback(t, f.c, f.authorize(t, "dave@elsewhere.test", url.Values{"email_verified": {"false"}}))
	require.Equal(t, http.StatusForbidden, status)
	_, _, err = b.store.UserGetByEmail(t.Context(), "dave@elsewhere.test")
	require.Error(t, err)
}
