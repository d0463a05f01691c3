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
	ctx := t.Context()
	hash, err := auth.HashPassword(testPassword)
	require.NoError(t, err)
	_, err = b.store.UserAdd(ctx, store.UserAddParams{Email: "ann@acme.test", Team: "acme", Role: auth.RoleApprover, PasswordHash: hash})
	require.NoError(t, err)
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
