package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/testfactory"
)

// postForm posts a form with extra headers and returns the status.
func (b *testBundle) postForm(t *testing.T, c *http.Client, path string, v url.Values, header map[string]string) int {
	t.Helper()
	res := b.postFormRes(t, c, path, v, header)
	res.Body.Close()
	return res.StatusCode
}

// postFormRes posts a form with extra headers; the caller closes the body.
func (b *testBundle) postFormRes(t *testing.T, c *http.Client, path string, v url.Values, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.srv.URL+path, strings.NewReader(v.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	require.NoError(t, err)
	return res
}

// signedIn reports whether c's session still opens the task list.
func (b *testBundle) signedIn(t *testing.T, c *http.Client) bool {
	t.Helper()
	res, _ := b.get(t, c, "/tasks", nil)
	return res.StatusCode == http.StatusOK
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("NoCredentialsIs401NotCSRF", func(t *testing.T) {
		r := b.api(t, "POST", "/api/v1/tasks", "", `{"kind":"deploy","pipeline":"noop"}`, nil)
		require.Equal(t, http.StatusUnauthorized, r.status, r.raw)
		code, _ := errCode(r)
		require.Equal(t, "unauthenticated", code)
		r = b.api(t, "POST", "/api/v1/tasks/x/cancel", "", ``, nil)
		require.Equal(t, http.StatusUnauthorized, r.status, r.raw)
	})
	t.Run("CookieRequestWithoutTokenIs403", func(t *testing.T) {
		c := b.browser(t)
		b.login(t, c, "alice@acme.test", testPassword)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.srv.URL+"/api/v1/tasks", strings.NewReader(`{"kind":"deploy","pipeline":"noop"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		res, err := c.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusForbidden, res.StatusCode)
	})
	t.Run("PlantedCookieIsRefused", func(t *testing.T) {
		c := b.browser(t)
		b.login(t, c, "alice@acme.test", testPassword)
		planted := strings.Repeat("A", 43)
		u, _ := url.Parse(b.srv.URL)
		c.Jar.SetCookies(u, []*http.Cookie{{Name: "fd_csrf", Value: planted, Path: "/"}})
		require.Equal(t, http.StatusForbidden, b.postForm(t, c, "/logout", url.Values{"_csrf": {planted}}, nil))
		require.True(t, b.signedIn(t, c), "the session lives on")
	})
	t.Run("TokenIsBoundToTheSession", func(t *testing.T) {
		one, two := b.browser(t), b.browser(t)
		b.login(t, one, "alice@acme.test", testPassword)
		b.login(t, two, "alice@acme.test", testPassword)
		tokOne := b.csrfFrom(t, one, "/tasks")
		tokTwo := b.csrfFrom(t, two, "/tasks")
		require.NotEqual(t, tokOne, tokTwo)
		require.Equal(t, http.StatusForbidden, b.postForm(t, two, "/logout", url.Values{"_csrf": {tokOne}}, nil))
		require.True(t, b.signedIn(t, two))
		require.Equal(t, http.StatusSeeOther, b.postForm(t, two, "/logout", url.Values{"_csrf": {tokTwo}}, nil))
		require.False(t, b.signedIn(t, two))
	})
	t.Run("RotatedAtLogin", func(t *testing.T) {
		c := b.browser(t)
		before := b.csrfFrom(t, c, "/login")
		res := b.login(t, c, "alice@acme.test", testPassword)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		after := b.csrfFrom(t, c, "/tasks")
		require.NotEqual(t, before, after)
		require.Equal(t, http.StatusForbidden, b.postForm(t, c, "/logout", url.Values{"_csrf": {before}}, nil),
			"the token from before the login does not work after it")
		require.True(t, b.signedIn(t, c))
	})
	t.Run("ForeignOriginIsRefused", func(t *testing.T) {
		c := b.browser(t)
		b.login(t, c, "alice@acme.test", testPassword)
		tok := b.csrfFrom(t, c, "/tasks")
		for _, h := range []map[string]string{
			{"Origin": "https://evil.example"},
			{"Sec-Fetch-Site": "cross-site"},
			{"Sec-Fetch-Site": "same-site", "Origin": "http://sub.127.0.0.1.nip.io"},
		} {
			require.Equal(t, http.StatusForbidden, b.postForm(t, c, "/logout", url.Values{"_csrf": {tok}}, h), "%v", h)
			require.True(t, b.signedIn(t, c))
		}
		require.Equal(t, http.StatusSeeOther, b.postForm(t, c, "/logout", url.Values{"_csrf": {tok}},
			map[string]string{"Origin": b.srv.URL, "Sec-Fetch-Site": "same-origin"}))
	})
	t.Run("LoginFormFromAForeignOriginIsRefused", func(t *testing.T) {
		c := b.browser(t)
		tok := b.csrfFrom(t, c, "/login")
		v := url.Values{"email": {"alice@acme.test"}, "password": {testPassword}, "_csrf": {tok}}
		require.Equal(t, http.StatusForbidden, b.postForm(t, c, "/login", v, map[string]string{"Origin": "https://evil.example"}))
		require.False(t, b.signedIn(t, c))
	})
}

// TestLiveHeaderKeepsTheCSRFToken: the task page's socket re-renders the
// header; its forms (an admin's "Retry compensation", "Mark resolved") must
// carry the page's token, or every click is refused.
func TestLiveHeaderKeepsTheCSRFToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.api(t, "POST", "/api/v1/tasks", b.bobToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	require.Equal(t, http.StatusAccepted, r.status)
	id := r.body["id"].(string)
	testfactory.Fixture(t, b.pool, `UPDATE tasks SET state = 'needs_attention' WHERE id = $1`, id)

	c := b.browser(t)
	b.login(t, c, "bob@rival.test", testPassword)
	tok := b.csrfFrom(t, c, "/tasks/"+id)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+"/tasks/"+id+"/ws",
		&websocket.DialOptions{HTTPClient: c, HTTPHeader: http.Header{"Origin": {b.srv.URL}}})
	require.NoError(t, err)
	defer ws.CloseNow()
	ws.SetReadLimit(4 << 20)
	_, frame, err := ws.Read(ctx)
	require.NoError(t, err)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(frame)))
	require.NoError(t, err)
	form := doc.Find(`#task-header form`).FilterFunction(func(_ int, s *goquery.Selection) bool {
		return s.Find(`[data-testid="resolve-retry"]`).Length() == 1
	})
	require.Equal(t, 1, form.Length(), "the pushed header has the retry form")
	require.Equal(t, tok, form.Find(`input[name="_csrf"]`).AttrOr("value", ""))
	require.Equal(t, http.StatusSeeOther, b.postForm(t, c, "/tasks/"+id+"/resolve", url.Values{"_csrf": {tok}, "action": {"retry"}}, nil))
	got := b.api(t, "GET", "/api/v1/tasks/"+id, b.bobToken, "", nil)
	require.Equal(t, "compensating", got.body["state"])
}
