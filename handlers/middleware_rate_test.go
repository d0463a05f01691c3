package handlers_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/store"
)

// Forms spend the same per-user rate as the API (a submit form, a re-run,
// an agent start), and unknown bearer tokens are limited per client
// address. Before, 40 parallel form submits were all let through, and
// token guesses were never limited.
func TestFormsAndBadTokensAreRateLimited(t *testing.T) {
	t.Parallel()
	// 0.01 a second: one request, then none for 100 s.
	b := setupWith(t, func(c *configT) { c.APIRate = 0.01 })
	alice := b.browser(t)
	b.login(t, alice, "alice@acme.test", testPassword)
	tok := b.csrfFrom(t, alice, "/tasks/new")
	form := url.Values{"_csrf": {tok}, "pipeline": {"noop"}}
	require.Equal(t, http.StatusSeeOther, b.postForm(t, alice, "/tasks", form, nil), "the first submit")
	res := b.postFormRes(t, alice, "/tasks", form, nil)
	res.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "the second, within the rate")
	secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, secs)
	for _, path := range []string{"/agent", "/tasks/" + store.NewTaskID() + "/rerun"} {
		require.Equal(t, http.StatusTooManyRequests, b.postForm(t, alice, path, url.Values{"_csrf": {tok}, "prompt": {"x"}}, nil), path)
	}

	bob := b.browser(t)
	b.login(t, bob, "bob@rival.test", testPassword)
	bobForm := url.Values{"_csrf": {b.csrfFrom(t, bob, "/tasks/new")}, "pipeline": {"noop"}}
	require.Equal(t, http.StatusSeeOther, b.postForm(t, bob, "/tasks", bobForm, nil), "per user: bob has his own")

	r := b.api(t, http.MethodGet, "/api/v1/me", "fd_not-a-real-token", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.status)
	r = b.api(t, http.MethodGet, "/api/v1/me", "fd_another-guess", "", nil)
	require.Equal(t, http.StatusTooManyRequests, r.status, r.raw)
	code, _ := errCode(r)
	require.Equal(t, "rate_limited", code)
	require.NotEmpty(t, r.header.Get("Retry-After"))
}

// Bad bearer tokens from one address do not lock out good ones from it
// (behind a proxy every client shares the address): a valid token always
// gets through, and only failures spend the address's budget. Before, the
// address was checked first, so a guesser locked out every script.
func TestBadTokensDoNotLockOutGoodOnes(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(c *configT) { c.APIRate = 1 }) // bursts of 2
	for _, guess := range []string{"fd_guess-1", "fd_guess-2"} {
		r := b.api(t, http.MethodGet, "/api/v1/me", guess, "", nil)
		require.Equal(t, http.StatusUnauthorized, r.status, r.raw)
	}
	r := b.api(t, http.MethodGet, "/api/v1/me", "fd_guess-3", "", nil)
	require.Equal(t, http.StatusTooManyRequests, r.status, "the address spent its failures: %s", r.raw)
	r = b.api(t, http.MethodGet, "/api/v1/me", b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, "a valid token from the same address: %s", r.raw)
	r = b.api(t, http.MethodGet, "/api/v1/me", b.bobToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, "another valid token: %s", r.raw)
	r = b.api(t, http.MethodGet, "/api/v1/me", "fd_guess-1", "", nil)
	require.Equal(t, http.StatusTooManyRequests, r.status, "still limited: %s", r.raw)
}
