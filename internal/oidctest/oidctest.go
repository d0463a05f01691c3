// Package oidctest is a fake OpenID Connect provider for tests: discovery,
// JWKS, an authorize endpoint and a token endpoint that checks the client,
// the code's redirect URI and the PKCE verifier and returns an RS256 ID
// token. It keeps its codes in memory; nothing in it is for production.
//
// The authorize endpoint shows a sign-in form; a request that names an
// email (the form's submission, or a test going straight through) gets a
// code. Knobs a test may add to that request: email_verified
// (true, false or missing) and id_token=expired|wrong_nonce.
package oidctest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

const keyID = "oidctest-1"

// Provider is the fake provider. Set Issuer before it serves.
type Provider struct {
	Issuer       string
	ClientID     string
	ClientSecret string

	key   *rsa.PrivateKey
	mu    sync.Mutex
	codes map[string]grant
}

// grant is what a code stands for until the token endpoint redeems it.
type grant struct {
	clientID, redirectURI, challenge, nonce string
	email, verified, idToken                string
	expires                                 time.Time
}

var (
	keyOnce   sync.Once
	sharedKey *rsa.PrivateKey
	keyErr    error
)

// New makes a provider for issuer and one client. The signing key is
// generated once per process.
func New(issuer, clientID, clientSecret string) (*Provider, error) {
	keyOnce.Do(func() { sharedKey, keyErr = rsa.GenerateKey(rand.Reader, 2048) })
	if keyErr != nil {
		return nil, fmt.Errorf("error generating the signing key: %w", keyErr)
	}
	return &Provider{Issuer: issuer, ClientID: clientID, ClientSecret: clientSecret, key: sharedKey, codes: map[string]grant{}}, nil
}

// Start serves a new provider on 127.0.0.1 for the test's lifetime.
func Start(t testing.TB, clientID, clientSecret string) *Provider {
	t.Helper()
	p, err := New("", clientID, clientSecret)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	p.Issuer = srv.URL
	return p
}

// Handler serves discovery, keys, authorize and token.
func (p *Provider) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /keys", p.keys)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	return mux
}

func (p *Provider) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.Issuer,
		"authorization_endpoint":                p.Issuer + "/authorize",
		"token_endpoint":                        p.Issuer + "/token",
		"jwks_uri":                              p.Issuer + "/keys",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"scopes_supported":                      []string{"openid", "email", "profile"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	})
}

func (p *Provider) keys(w http.ResponseWriter, _ *http.Request) {
	pub := p.key.PublicKey
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": keyID,
		"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	case q.Get("client_id") != p.ClientID:
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	case err != nil || !redirect.IsAbs():
		http.Error(w, "redirect_uri must be absolute", http.StatusBadRequest)
		return
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "PKCE (S256) is required", http.StatusBadRequest)
		return
	}
	if q.Get("email") == "" {
		hidden := url.Values{}
		for k, vs := range q {
			if k != "email" && k != "email_verified" && k != "id_token" {
				hidden[k] = vs
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = signInForm.Execute(w, hidden)
		return
	}
	code := b64(randomBytes(24))
	p.mu.Lock()
	p.codes[code] = grant{
		clientID: q.Get("client_id"), redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		nonce: q.Get("nonce"), email: q.Get("email"), verified: q.Get("email_verified"), idToken: q.Get("id_token"),
		expires: time.Now().Add(time.Minute),
	}
	p.mu.Unlock()
	back := redirect.Query()
	back.Set("code", code)
	back.Set("state", q.Get("state"))
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	if id != p.ClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(p.ClientSecret)) != 1 {
		writeJSON(w, http.StatusUnauthorized, oauthError("invalid_client", "unknown client or wrong secret"))
		return
	}
	if r.PostFormValue("grant_type") != "authorization_code" {
		writeJSON(w, http.StatusBadRequest, oauthError("unsupported_grant_type", "only authorization_code"))
		return
	}
	code := r.PostFormValue("code")
	p.mu.Lock()
	g, found := p.codes[code]
	delete(p.codes, code) // a code is used once, whatever happens next
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
	switch {
	case !found || time.Now().After(g.expires) || g.clientID != id:
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_grant", "unknown, used or expired code"))
		return
	case g.redirectURI != r.PostFormValue("redirect_uri"):
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_grant", "redirect_uri differs from the authorization request"))
		return
	case subtle.ConstantTimeCompare([]byte(b64(sum[:])), []byte(g.challenge)) != 1:
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_grant", "PKCE verification failed"))
		return
	}
	idToken, err := p.sign(g)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, oauthError("server_error", err.Error()))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": b64(randomBytes(24)), "token_type": "Bearer", "expires_in": 300, "id_token": idToken,
	})
}

// sign makes the ID token of a grant, spoiled as the grant's knobs ask.
func (p *Provider) sign(g grant) (string, error) {
	now := time.Now()
	claims := map[string]any{
		"iss": p.Issuer, "sub": "user-" + b64(sha256Sum(g.email)[:9]), "aud": g.clientID,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "nonce": g.nonce, "email": g.email,
	}
	switch g.verified {
	case "", "true":
		claims["email_verified"] = true
	case "false":
		claims["email_verified"] = false
	} // "missing": no claim at all
	switch g.idToken {
	case "expired":
		claims["iat"], claims["exp"] = now.Add(-time.Hour).Unix(), now.Add(-30*time.Minute).Unix()
	case "wrong_nonce":
		claims["nonce"] = "not-" + g.nonce
	}
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": keyID, "typ": "JWT"})
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := b64(header) + "." + b64(payload)
	sig, err := rsa.SignPKCS1v15(rand.Reader, p.key, crypto.SHA256, sha256Sum(signed))
	if err != nil {
		return "", err
	}
	return signed + "." + b64(sig), nil
}

func oauthError(code, description string) map[string]string {
	return map[string]string{"error": code, "error_description": description}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func sha256Sum(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
