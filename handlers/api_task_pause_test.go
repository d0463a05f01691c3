package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
)

// tokenFor adds a user of acme with role and returns an API token of theirs.
func (b *testBundle) tokenFor(t *testing.T, email string, role auth.Role) string {
	t.Helper()
	testfactory.User(t, b.store, email, "acme", role)
	secret, h := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, b.store.TokenCreate(t.Context(), email, "test", h))
	return secret
}

// failStep parks a submitted deploy as a worker does when its step b fails
// under on_failure: ask (paused, failed_step, a decision deadline).
func (b *testBundle) failStep(t *testing.T, id string) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `
		WITH s AS (INSERT INTO task_steps (task_id, idx, name, idempotency_key, state, attempt)
			VALUES ($1, 1, 'a', 'ka', 'completed', 1), ($1, 2, 'b', 'kb', 'failed', 1)
			ON CONFLICT (task_id, idx) DO UPDATE SET state = excluded.state, attempt = 1)
		UPDATE tasks SET state = 'paused', started_at = now(), failed_step = '{"index":2,"name":"b","error":"smoke test failed","attempt":1}',
			decision_expires_at = now() + interval '1 hour' WHERE id = $1`, id)
	require.NoError(t, err)
}

func TestPauseAndResumeAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	viewer := b.tokenFor(t, "vic@acme.test", auth.RoleViewer)
	submit := func() string {
		r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		return r.body["id"].(string)
	}
	id := submit()
	path := "/api/v1/tasks/" + id

	r := b.api(t, "POST", path+"/pause", viewer, "", nil)
	require.Equal(t, http.StatusForbidden, r.status, r.raw)
	r = b.api(t, "POST", path+"/pause", b.bobToken, "", nil)
	require.Equal(t, http.StatusNotFound, r.status, "another team's task does not exist")

	r = b.api(t, "POST", path+"/pause", b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Equal(t, "paused", r.body["state"], "a pending task pauses at once")
	r = b.api(t, "POST", path+"/pause", b.aliceToken, "", nil)
	require.Equal(t, http.StatusConflict, r.status, r.raw)

	for _, tt := range []struct {
		name, body  string
		status      int
		code, field string
	}{
		{"UnknownAction", `{"action":"redo"}`, 422, "invalid", "action"},
		{"UnknownField", `{"action":"continue","why":1}`, 422, "invalid", "why"},
		{"Malformed", `{"action":`, 400, "invalid", ""},
		{"RetryWithoutAFailedStep", `{"action":"retry"}`, 409, "conflict", ""},
		{"RollbackWithoutAFailedStep", `{"action":"rollback"}`, 409, "conflict", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := b.api(t, "POST", path+"/resume", b.aliceToken, tt.body, nil)
			require.Equal(t, tt.status, r.status, r.raw)
			code, field := errCode(r)
			require.Equal(t, tt.code, code)
			require.Equal(t, tt.field, field)
		})
	}
	r = b.api(t, "POST", path+"/resume", viewer, "", nil)
	require.Equal(t, http.StatusForbidden, r.status, r.raw)
	r = b.api(t, "POST", path+"/resume", b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Equal(t, "pending", r.body["state"])
	r = b.api(t, "POST", path+"/resume", b.aliceToken, "", nil)
	require.Equal(t, http.StatusConflict, r.status, "not paused")

	ev := b.api(t, "GET", path+"/events", b.aliceToken, "", nil)
	var types []string
	for _, e := range ev.body["events"].([]any) {
		e := e.(map[string]any)
		types = append(types, e["type"].(string))
		if e["type"] == "task.resumed" {
			require.Equal(t, "continue", e["data"].(map[string]any)["action"])
		}
	}
	require.Contains(t, types, "task.paused")
	require.Contains(t, types, "task.resumed")

	require.Equal(t, http.StatusAccepted, b.api(t, "POST", path+"/cancel", b.aliceToken, "", nil).status)
	for _, p := range []string{"/pause", "/resume"} {
		r = b.api(t, "POST", path+p, b.aliceToken, "", nil)
		require.Equal(t, http.StatusConflict, r.status, "terminal: %s", p)
	}

	t.Run("CancelWhilePaused", func(t *testing.T) {
		id := submit()
		require.Equal(t, http.StatusOK, b.api(t, "POST", "/api/v1/tasks/"+id+"/pause", b.aliceToken, "", nil).status)
		r := b.api(t, "POST", "/api/v1/tasks/"+id+"/cancel", b.aliceToken, "", nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		require.Equal(t, "cancelled", r.body["state"], "never ran: cancelled at once")
	})
}

func TestGuidedFailureDecisionsAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	approver := b.tokenFor(t, "ann@acme.test", auth.RoleApprover)
	submit := func() string {
		r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		id := r.body["id"].(string)
		b.failStep(t, id)
		return id
	}
	id := submit()
	path := "/api/v1/tasks/" + id
	r := b.api(t, "GET", path, b.aliceToken, "", nil)
	require.Equal(t, "paused", r.body["state"])
	require.Equal(t, map[string]any{"index": float64(2), "name": "b", "error": "smoke test failed", "attempt": float64(1)}, r.body["failed_step"])
	require.NotNil(t, r.body["decision_expires_at"])

	for _, tt := range []struct {
		name, token, body string
		status            int
		code, field       string
	}{
		{"PlainResumeOnAFailedStep", b.aliceToken, "", 409, "conflict", ""},
		{"ContinueOnAFailedStep", b.aliceToken, `{"action":"continue"}`, 409, "conflict", ""},
		{"SkipByTheCreator", b.aliceToken, `{"action":"skip","comment":"I wrote it, I skip it"}`, 403, "forbidden", ""},
		{"SkipByADeployer", b.aliceToken, `{"action":"skip","comment":"a reason long enough"}`, 403, "forbidden", ""},
		{"SkipWithoutAReason", approver, `{"action":"skip"}`, 422, "invalid", "comment"},
		{"SkipWithAShortReason", approver, `{"action":"skip","comment":"   flaky   "}`, 422, "invalid", "comment"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := b.api(t, "POST", path+"/resume", tt.token, tt.body, nil)
			require.Equal(t, tt.status, r.status, r.raw)
			code, field := errCode(r)
			require.Equal(t, tt.code, code, r.raw)
			require.Equal(t, tt.field, field)
		})
	}
	r = b.api(t, "POST", path+"/resume", approver, `{"action":"skip","comment":"known flaky smoke test"}`, nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Equal(t, "pending", r.body["state"])
	require.Nil(t, r.body["failed_step"])
	r = b.api(t, "GET", path, b.aliceToken, "", nil)
	steps := r.body["steps"].([]any)
	require.Equal(t, "skipped", steps[1].(map[string]any)["state"])

	for _, action := range []string{"retry", "rollback"} {
		id := submit()
		r := b.api(t, "POST", "/api/v1/tasks/"+id+"/resume", b.aliceToken, fmt.Sprintf(`{"action":%q}`, action), nil)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		want := map[string]string{"retry": "pending", "rollback": "compensating"}[action]
		require.Equal(t, want, r.body["state"])
		again := b.api(t, "POST", "/api/v1/tasks/"+id+"/resume", approver, `{"action":"rollback"}`, nil)
		require.Equal(t, http.StatusConflict, again.status, "decided once")
	}
	var n int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE action IN ('task.resumed', 'step.skipped')`).Scan(&n))
	require.Equal(t, 4, n, "each decision in the audit log, a skip twice")
}

func TestPauseAndResumeOverTheWebSocket(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	id := r.body["id"].(string)
	ws, _, err := b.dialWS(t, b.aliceToken, nil)
	require.NoError(t, err)
	ws.send(fmt.Sprintf(`{"type":"pause","task_id":%q,"id":"p1"}`, id))
	require.Equal(t, map[string]any{"type": "ack", "id": "p1"}, ws.next())
	require.Equal(t, "paused", b.api(t, "GET", "/api/v1/tasks/"+id, b.aliceToken, "", nil).body["state"])
	ws.send(fmt.Sprintf(`{"type":"resume","task_id":%q,"action":"retry","id":"r0"}`, id))
	m := ws.next()
	require.Equal(t, "error", m["type"])
	require.Equal(t, "conflict", m["code"])
	require.Equal(t, "r0", m["id"])
	ws.send(fmt.Sprintf(`{"type":"resume","task_id":%q,"id":"r1"}`, id))
	require.Equal(t, map[string]any{"type": "ack", "id": "r1"}, ws.next())
	require.Equal(t, "pending", b.api(t, "GET", "/api/v1/tasks/"+id, b.aliceToken, "", nil).body["state"])

	bob, _, err := b.dialWS(t, b.bobToken, nil)
	require.NoError(t, err)
	bob.send(fmt.Sprintf(`{"type":"pause","task_id":%q,"id":"b1"}`, id))
	m = bob.next()
	require.Equal(t, "not_found", m["code"], "another team's task")
	require.Equal(t, "pending", b.api(t, "GET", "/api/v1/tasks/"+id, b.aliceToken, "", nil).body["state"])
}

// The run page's decision card offers each person what task.MayResume
// allows them: the creator retries or rolls back but may not skip.
func TestDecisionCardOffersWhatTheViewerMayDo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hash, err := testPasswordHash()
	require.NoError(t, err)
	_, err = b.store.UserAdd(t.Context(), store.UserAddParams{Email: "ann@acme.test", Team: "acme", Role: auth.RoleApprover, PasswordHash: hash})
	require.NoError(t, err)
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	id := r.body["id"].(string)
	b.failStep(t, id)

	page := func(email string) *goquery.Document {
		c := b.browser(t)
		b.login(t, c, email, testPassword)
		res, body := b.get(t, c, "/tasks/"+id, nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		return doc
	}
	alice := page("alice@acme.test")
	card := alice.Find(`[data-testid="decision-card"]`)
	require.Equal(t, "b", card.AttrOr("data-step", ""))
	require.Equal(t, "smoke test failed", card.Find(`[data-testid="decision-error"]`).Text())
	require.Equal(t, 1, card.Find(`[data-testid="retry-open"]`).Length())
	require.Equal(t, 1, card.Find(`[data-testid="rollback-open"]`).Length())
	require.Equal(t, 0, card.Find(`[data-testid="skip-open"]`).Length())
	require.Contains(t, card.Find(`[data-testid="skip-why-not"]`).Text(), "approver or admin")
	require.Equal(t, 0, alice.Find(`[data-testid="pause"]`).Length(), "paused already")

	ann := page("ann@acme.test")
	require.Equal(t, 1, ann.Find(`[data-testid="decision-card"] [data-testid="skip-open"]`).Length())
	require.Equal(t, 1, ann.Find(`[data-testid="skip-comment"][required][minlength="10"]`).Length())
}
