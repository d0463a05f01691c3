package handlers_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/testfactory"
)

// TestApprovalDecideNotPendingIsConflict: whatever makes an approval not
// pending — unknown (UUID or not), expired, already decided — the API
// answers 409 conflict, the WebSocket an error of code conflict and the
// inbox form its page with the reason; only an unknown task is 404.
func TestApprovalDecideNotPendingIsConflict(t *testing.T) {
	t.Parallel()
	b := setup(t)
	addApprover(t, b, "ann@acme.test")
	secret, hash := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, b.store.TokenCreate(t.Context(), "ann@acme.test", "test", hash))
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"approval-demo","params":{}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	taskID := r.body["id"].(string)
	a := testfactory.AwaitingApproval(t, b.store, taskID, []string{"approver", "admin"})
	const unknown = "0190b2a4-0000-7000-8000-000000000000"

	decide := func(task, approval, verb string) apiResp {
		t.Helper()
		return b.api(t, "POST", "/api/v1/tasks/"+task+"/approvals/"+approval+"/"+verb, secret, `{"comment":"c"}`, nil)
	}
	conflict := func(r apiResp, what string) {
		t.Helper()
		require.Equal(t, http.StatusConflict, r.status, "%s: %s", what, r.raw)
		require.Equal(t, "conflict", r.body["error"].(map[string]any)["code"], what)
	}

	t.Run("UnknownApprovalAPI", func(t *testing.T) {
		for _, verb := range []string{"approve", "reject"} {
			conflict(decide(taskID, unknown, verb), verb+" unknown")
			conflict(decide(taskID, "not-a-uuid", verb), verb+" not a UUID")
			require.Equal(t, http.StatusNotFound, decide(unknown, a.ID, verb).status, "an unknown task stays 404")
			require.Equal(t, http.StatusNotFound, decide("not-a-uuid", a.ID, verb).status)
		}
	})
	t.Run("UnknownApprovalWebSocket", func(t *testing.T) {
		ws, _, err := b.dialWS(t, secret, nil)
		require.NoError(t, err)
		for i, id := range []string{unknown, "nope"} {
			ws.send(fmt.Sprintf(`{"type":"approve","task_id":%q,"approval_id":%q,"id":"u%d"}`, taskID, id, i))
			m := ws.next()
			require.Equal(t, "error", m["type"])
			require.Equal(t, fmt.Sprintf("u%d", i), m["id"])
			require.Equal(t, "conflict", m["code"], "%v", m)
		}
		ws.send(fmt.Sprintf(`{"type":"reject","task_id":%q,"approval_id":%q,"id":"n1"}`, unknown, a.ID))
		require.Equal(t, "not_found", ws.next()["code"], "an unknown task")
	})
	t.Run("UnknownApprovalForm", func(t *testing.T) {
		ann := b.browser(t)
		b.login(t, ann, "ann@acme.test", testPassword)
		tok := b.csrfFrom(t, ann, "/approvals")
		res, err := ann.PostForm(b.srv.URL+"/approvals/"+taskID+"/"+unknown, url.Values{"decision": {"approve"}, "_csrf": {tok}})
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, string(body), "not pending", "the inbox says why")
		require.Contains(t, string(body), `data-testid="inbox-item"`, "the real approval is still there to decide")
	})
	t.Run("ExpiredThenDecided", func(t *testing.T) {
		_, err := b.pool.Exec(t.Context(), `UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = $1`, a.ID)
		require.NoError(t, err)
		conflict(decide(taskID, a.ID, "approve"), "expired")
		_, err = b.pool.Exec(t.Context(), `UPDATE approvals SET expires_at = now() + interval '1 hour' WHERE id = $1`, a.ID)
		require.NoError(t, err)
		r := decide(taskID, a.ID, "approve")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		conflict(decide(taskID, a.ID, "reject"), "already decided")
	})
}
