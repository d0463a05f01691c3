package handlers_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/config"
	"flightdeck/store"
)

func TestNotificationPrefsAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	all := map[string]any{"approval": true, "decision": true, "attention": true, "ended": true}
	r := b.api(t, "GET", "/api/v1/me/notifications", b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Equal(t, all, r.body["email"], "every kind is on until turned off")

	r = b.api(t, "PUT", "/api/v1/me/notifications", b.aliceToken, `{"email":{"decision":false,"ended":false}}`, nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Equal(t, map[string]any{"approval": true, "decision": false, "attention": true, "ended": false}, r.body["email"])
	r = b.api(t, "PUT", "/api/v1/me/notifications", b.aliceToken, `{"email":{"ended":true}}`, nil)
	require.Equal(t, map[string]any{"approval": true, "decision": false, "attention": true, "ended": true}, r.body["email"], "kinds left out keep theirs")
	r = b.api(t, "GET", "/api/v1/me/notifications", b.bobToken, "", nil)
	require.Equal(t, all, r.body["email"], "one person's choices are theirs alone")

	for _, tc := range []struct{ name, body, field string }{
		{"UnknownKind", `{"email":{"approval":true,"sms":true}}`, "email.sms"},
		{"UnknownTop", `{"email":{},"chat":{}}`, "chat"},
		{"WrongType", `{"email":{"approval":"yes"}}`, "email.approval"},
		{"EmailNotObject", `{"email":true}`, "email"},
		{"NoEmail", `{}`, "email"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.api(t, "PUT", "/api/v1/me/notifications", b.aliceToken, tc.body, nil)
			require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
			_, field := errCode(r)
			require.Equal(t, tc.field, field)
		})
	}
}

// TestWebhookSlackFormatAndTest: a subscription says format slack (or is
// refused an unknown format) and its test message reaches the endpoint as
// a Slack-compatible {text, blocks}.
func TestWebhookSlackFormatAndTest(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(c *config.Config) { c.WebhookAllow = []string{"127.0.0.1"} })
	got := make(chan map[string]any, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		got <- m
	}))
	t.Cleanup(recv.Close)

	r := b.api(t, "POST", "/api/v1/webhooks", b.bobToken, `{"url":"`+recv.URL+`","events":["task.failed","x"],"format":"teams"}`, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
	_, field := errCode(r)
	require.Equal(t, "format", field)

	r = b.api(t, "POST", "/api/v1/webhooks", b.bobToken,
		`{"url":"`+recv.URL+`","events":["task.failed","approval.requested","task.paused","task.needs_attention"],"format":"slack"}`, nil)
	require.Equal(t, http.StatusCreated, r.status, r.raw)
	require.Equal(t, "slack", r.body["format"])
	id := r.body["id"].(string)

	r = b.api(t, "POST", "/api/v1/webhooks/"+id+"/test", b.bobToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Equal(t, true, r.body["ok"], r.raw)
	m := <-got
	text := m["text"].(string)
	require.True(t, strings.HasPrefix(text, "[flightdeck] Test message"), text)
	require.Contains(t, text, "team rival")
	require.NotEmpty(t, m["blocks"])

	r = b.api(t, "POST", "/api/v1/webhooks/"+id+"/test", b.aliceToken, "", nil)
	require.Equal(t, http.StatusNotFound, r.status, "another team's webhook is not there for her")
}

// TestAccountPage: the form turns kinds off and on; what the API answers
// follows.
func TestAccountPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	res, body := b.get(t, c, "/account", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, `data-testid="notify-approval"`)
	tok := b.csrfFrom(t, c, "/account")
	status := b.postForm(t, c, "/account", url.Values{"_csrf": {tok}, "email": {"approval", "attention"}}, nil)
	require.Equal(t, http.StatusSeeOther, status)
	r := b.api(t, "GET", "/api/v1/me/notifications", b.aliceToken, "", nil)
	require.Equal(t, map[string]any{"approval": true, "decision": false, "attention": true, "ended": false}, r.body["email"])
	require.Equal(t, http.StatusUnprocessableEntity, b.postForm(t, c, "/account", url.Values{"_csrf": {tok}, "email": {"sms"}}, nil))
}

// TestWebhookPageListsEmails: admins see their teams' emails with where
// each stands (sent, retrying, given up) and the last error; not others'.
func TestWebhookPageListsEmails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	r := b.api(t, "POST", "/api/v1/tasks", b.bobToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	taskID := r.body["id"].(string)
	bob, _, err := b.store.UserGetByEmail(ctx, "bob@rival.test")
	require.NoError(t, err)
	n, err := b.store.MailEnqueue(ctx, []store.MailParams{{TeamID: bob.Memberships[0].TeamID, TaskID: taskID, UserID: bob.ID, Seq: 1,
		Kind: "ended", Recipient: "bob@rival.test", Subject: "[flightdeck] noop failed", Text: "t", HTML: "h"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ms, err := b.store.MailClaim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.NoError(t, b.store.MailRecord(ctx, store.MailOutcome{ID: ms[0].ID, ClaimToken: ms[0].ClaimToken,
		Error: "550 no such mailbox", Permanent: true, MaxAge: time.Hour}))

	c := b.browser(t)
	b.login(t, c, "bob@rival.test", testPassword)
	_, body := b.get(t, c, "/webhooks", nil)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	row := doc.Find(`[data-testid="mail-row"]`)
	require.Equal(t, 1, row.Length(), body)
	require.Equal(t, "given up", strings.TrimSpace(row.Find(`[data-testid="mail-state"]`).Text()))
	require.Contains(t, row.Text(), "550 no such mailbox")
	require.Contains(t, row.Text(), "[flightdeck] noop failed")
}
