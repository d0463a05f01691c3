package handlers_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
)

func TestApprovalInboxPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	addApprover(t, b, "ann@acme.test")
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"approval-demo","params":{}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status)
	taskID := r.body["id"].(string)
	a := testfactory.AwaitingApproval(t, b.store, taskID, []string{"approver", "admin"})

	// The requester has nothing to decide.
	alice := b.browser(t)
	b.login(t, alice, "alice@acme.test", testPassword)
	_, body := b.get(t, alice, "/approvals", nil)
	require.Contains(t, body, `data-testid="inbox-empty"`)

	ann := b.browser(t)
	b.login(t, ann, "ann@acme.test", testPassword)
	res, body := b.get(t, ann, "/approvals", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	item := doc.Find(`[data-testid="inbox-item"]`)
	require.Equal(t, 1, item.Length())
	require.Equal(t, taskID, item.AttrOr("data-task", ""))
	require.Contains(t, item.Text(), "alice@acme.test")
	require.Equal(t, "page", doc.Find(`[data-testid="nav-approvals"]`).AttrOr("aria-current", ""))
	form := item.Find("form")
	action := form.AttrOr("action", "")
	require.Equal(t, "/approvals/"+taskID+"/"+a.ID, action)
	tok := form.Find(`input[name="_csrf"]`).AttrOr("value", "")

	decide := func(v url.Values) (*http.Response, string) {
		res, err := ann.PostForm(b.srv.URL+action, v)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(body)
	}
	res, _ = decide(url.Values{"decision": {"approve"}, "comment": {"ok"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode, "no CSRF token")

	res, _ = decide(url.Values{"decision": {"approve"}, "comment": {"looks right"}, "_csrf": {tok}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/approvals?decided=approve", res.Header.Get("Location"))
	r = b.api(t, "GET", "/api/v1/tasks/"+taskID, b.aliceToken, "", nil)
	require.Equal(t, "pending", r.body["state"], "approved: back in the queue")
	_, body = b.get(t, ann, "/approvals?decided=approve", nil)
	require.Contains(t, body, "Approved.")
	require.Contains(t, body, `data-testid="inbox-empty"`)

	// Deciding again is refused on the page, not with an error page.
	res, body = decide(url.Values{"decision": {"reject"}, "_csrf": {tok}})
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Contains(t, body, "not pending")
	require.Contains(t, body, `data-testid="inbox-empty"`)
}

func TestApprovalInboxShowsWhatChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	addApprover(t, b, "ann@acme.test")
	submit := func(app, version string) string {
		r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken,
			`{"kind":"deploy","pipeline":"web-service","params":{"app":"`+app+`","version":"`+version+`","env":"production"}}`, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		return r.body["id"].(string)
	}
	testfactory.Completed(t, b.store, submit("shop", "1.2"))
	shop := submit("shop", "1.3")
	testfactory.AwaitingApproval(t, b.store, shop, []string{"approver", "admin"})
	cart := submit("cart", "2.0")
	testfactory.AwaitingApproval(t, b.store, cart, []string{"approver", "admin"})

	page := func(c *http.Client) *goquery.Document {
		res, body := b.get(t, c, "/approvals", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		return doc
	}
	ann := b.browser(t)
	b.login(t, ann, "ann@acme.test", testPassword)
	doc := page(ann)
	require.Equal(t, "2", doc.Find(`[data-testid="nav-approvals-count"]`).Text(), "the badge")
	item := doc.Find(`[data-testid="inbox-item"][data-task="` + shop + `"]`)
	require.Equal(t, "shop · production", item.Find(`[data-testid="inbox-target"]`).Text())
	require.Equal(t, "version 1.2 → 1.3", strings.Join(strings.Fields(item.Find(`[data-testid="inbox-change"]`).Text()), " "))
	require.Equal(t, "any approver or admin, except alice@acme.test (who asked)",
		strings.Join(strings.Fields(item.Find(`[data-testid="inbox-deciders"]`).Text()), " "))
	require.Equal(t, "release", item.Find(`[data-testid="inbox-step"]`).Text())
	// What changes, param by param, from the target's current deploy
	// (contract §9): the version differs, replicas does not.
	require.Contains(t, item.Find(`[data-testid="changes"]`).Text(), "replicas")
	require.Equal(t, "true", item.Find(`[data-testid="change"][data-field="version"]`).AttrOr("data-changed", ""))
	require.Equal(t, "false", item.Find(`[data-testid="change"][data-field="replicas"]`).AttrOr("data-changed", ""))
	item = doc.Find(`[data-testid="inbox-item"][data-task="` + cart + `"]`)
	require.Equal(t, "version 2.0 (first deploy of this target)", strings.Join(strings.Fields(item.Find(`[data-testid="inbox-change"]`).Text()), " "))

	// The requester decides nothing, and sees what waits for whom.
	alice := b.browser(t)
	b.login(t, alice, "alice@acme.test", testPassword)
	doc = page(alice)
	require.Equal(t, 0, doc.Find(`[data-testid="nav-approvals-count"]`).Length(), "no badge: nothing to decide")
	require.Equal(t, 1, doc.Find(`[data-testid="inbox-empty"]`).Length())
	waiting := doc.Find(`[data-testid="waiting-item"]`)
	require.Equal(t, 2, waiting.Length())
	require.Equal(t, 0, waiting.Find("form").Length(), "read-only")
	require.Contains(t, waiting.First().Find(`[data-testid="inbox-change"]`).Text(), "1.3")
}

// addApprover adds an approver to acme with the test password.
func addApprover(t *testing.T, b *testBundle, email string) {
	t.Helper()
	hash, err := testPasswordHash()
	require.NoError(t, err)
	_, err = b.store.UserAdd(t.Context(), store.UserAddParams{Email: email, Team: "acme", Role: auth.RoleApprover, PasswordHash: hash})
	require.NoError(t, err)
}
