package handlers_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
)

// TestLoginThrottle: failed password logins are throttled per account and
// per client address (429 with Retry-After); a throttled account refuses
// even the right password, a throttled address only failures; successes
// cost nothing, and X-Forwarded-For does not make a new address.
func TestLoginThrottle(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(c *configT) {
		c.LoginAccountFailures, c.LoginAddressFailures, c.LoginFailureWindow = 3, 5, time.Hour
	})
	attempt := func(email, password string, header map[string]string) (*http.Response, string) {
		c := b.browser(t)
		tok := b.csrfFrom(t, c, "/login")
		res := b.postFormRes(t, c, "/login", url.Values{"email": {email}, "password": {password}, "_csrf": {tok}}, header)
		defer res.Body.Close()
		doc, err := goquery.NewDocumentFromReader(res.Body)
		require.NoError(t, err)
		return res, doc.Find(`[data-testid="login-error"]`).Text()
	}

	for range 5 {
		res, _ := attempt("bob@rival.test", testPassword, nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, "successful logins are not counted")
	}
	for range 3 {
		res, _ := attempt("alice@acme.test", "wrong-password", nil)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	}
	res, msg := attempt("alice@acme.test", testPassword, nil)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "the account is throttled, right password or not")
	retry, err := strconv.Atoi(res.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, retry)
	require.Contains(t, msg, "Too many failed sign-ins")
	res, _ = attempt("ALICE@acme.test ", testPassword, nil)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "the account, however it is spelled")

	res, _ = attempt("bob@rival.test", testPassword, nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "another account from the same address still signs in")
	for range 2 {
		res, _ = attempt("nobody@acme.test", "wrong-password", map[string]string{"X-Forwarded-For": "203.0.113.9"})
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	}
	res, _ = attempt("nobody@acme.test", "wrong-password", map[string]string{"X-Forwarded-For": "198.51.100.7"})
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "five failures from this address (a forwarded-for header does not change it)")
	require.NotEmpty(t, res.Header.Get("Retry-After"))

	// Everyone behind one NAT shares the address: its throttle refuses
	// failures, not a right password for an account that is not itself
	// throttled. Before, bob was locked out here too.
	res, _ = attempt("bob@rival.test", testPassword, map[string]string{"X-Forwarded-For": "198.51.100.7"})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "a right password gets through the address's throttle")
	res, _ = attempt("bob@rival.test", "wrong-password", nil)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "a wrong one is refused as throttled")
	res, _ = attempt("alice@acme.test", testPassword, nil)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "a throttled account stays throttled")
	for range 2 {
		res, _ = attempt("bob@rival.test", "wrong-password", nil)
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	}
	res, _ = attempt("bob@rival.test", testPassword, nil)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "failures refused by the address's throttle still count against the account")
}

// TestSessionCookieSecureBehindATLSProxy: behind a proxy that ends TLS the
// request reaches flightdeck over plain HTTP; X-Forwarded-Proto: https still
// makes the session cookie Secure.
func TestSessionCookieSecureBehindATLSProxy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	login := func(header map[string]string) *http.Cookie {
		c := b.browser(t)
		tok := b.csrfFrom(t, c, "/login")
		res := b.postFormRes(t, c, "/login", url.Values{"email": {"alice@acme.test"}, "password": {testPassword}, "_csrf": {tok}}, header)
		defer res.Body.Close()
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		for _, ck := range res.Cookies() {
			if ck.Name == "fd_session" {
				return ck
			}
		}
		t.Fatal("no session cookie")
		return nil
	}
	require.False(t, login(nil).Secure, "plain HTTP: a Secure cookie would never come back")
	require.True(t, login(map[string]string{"X-Forwarded-Proto": "https"}).Secure)
}
