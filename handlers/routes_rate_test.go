package handlers_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/store"
)

// Every state-changing route spends the caller's per-user rate: the test
// walks the route table itself, so a route added without the limit fails
// here. Before, POST /environments/promote, /freezes and /freezes/:id/end
// had none (40 parallel promote forms made 40 tasks in 0.6 s).
func TestEveryStateChangingRouteIsRateLimited(t *testing.T) {
	t.Parallel()
	// 0.01 a second: one request, then none for 100 s.
	b := setupWith(t, func(c *configT) { c.APIRate = 0.01 })
	alice := b.browser(t)
	b.login(t, alice, "alice@acme.test", testPassword)
	tok := b.csrfFrom(t, alice, "/tasks/new") // pages' GETs spend nothing

	// Throttled on their own terms, not per user: a sign-in has no user
	// yet (failed logins are limited per account and address).
	exempt := map[string]string{"POST /login": "failed logins are throttled per account and address"}

	// The one request the budget allows.
	r := b.api(t, http.MethodGet, "/api/v1/me", b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)

	param := regexp.MustCompile(`:[a-z_]+`)
	seen := 0
	for _, rt := range b.echo.Routes() {
		switch rt.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			continue
		}
		key := rt.Method + " " + rt.Path
		if _, ok := exempt[key]; ok {
			continue
		}
		seen++
		path := param.ReplaceAllStringFunc(rt.Path, func(string) string { return store.NewTaskID() })
		var res *http.Response
		if strings.HasPrefix(path, "/api/") {
			req, err := http.NewRequestWithContext(t.Context(), rt.Method, b.srv.URL+path, strings.NewReader("{}"))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+b.aliceToken)
			req.Header.Set("Content-Type", "application/json")
			res, err = b.srv.Client().Do(req)
			require.NoError(t, err)
		} else {
			req, err := http.NewRequestWithContext(t.Context(), rt.Method, b.srv.URL+path, strings.NewReader(url.Values{"_csrf": {tok}}.Encode()))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, err = alice.Do(req)
			require.NoError(t, err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "%s has no per-user rate limit", key)
	}
	require.Greater(t, seen, 20, "the walk saw the route table")
}
