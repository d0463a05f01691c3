package handlers_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/testfactory"
)

// TestTextPostgreSQLCannotStore: a NUL byte or invalid UTF-8 in a filter, a
// header or a comment is the client's mistake (422 invalid, naming the
// field), never a 500 from the database; nothing is written.
func TestTextPostgreSQLCannotStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	addApprover(t, b, "ann@acme.test")
	ann, hash := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, b.store.TokenCreate(t.Context(), "ann@acme.test", "test", hash))
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"approval-demo","params":{}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	taskID := r.body["id"].(string)
	a := testfactory.AwaitingApproval(t, b.store, taskID, []string{"approver", "admin"})
	decide := "/api/v1/tasks/" + taskID + "/approvals/" + a.ID + "/"

	for _, c := range []struct {
		method, path, token, body string
		header                    map[string]string
		field                     string
	}{
		{"GET", "/api/v1/tasks?pipeline=%00", b.aliceToken, "", nil, "pipeline"},
		{"GET", "/api/v1/tasks?pipeline=%ff", b.aliceToken, "", nil, "pipeline"},
		{"GET", "/api/v1/tasks?created_by=a%00b", b.aliceToken, "", nil, "created_by"},
		{"GET", "/api/v1/environments?pipeline=%00", b.aliceToken, "", nil, "pipeline"},
		{"POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, map[string]string{"Idempotency-Key": "k\xff"}, "Idempotency-Key"},
		{"POST", "/api/v1/tasks/" + taskID + "/rerun", b.aliceToken, "", map[string]string{"Idempotency-Key": "k\xfe"}, "Idempotency-Key"},
		{"POST", "/api/v1/tasks", b.aliceToken, "{\"kind\":\"deploy\",\"pipeline\":\"noop\",\"params\":{\"app\":\"a\xff\xfeb\"}}", nil, "params.app"},
		{"POST", decide + "approve", ann, "{\"comment\":\"a\xffb\"}", nil, "comment"},
		{"POST", decide + "approve", ann, `{"comment":"a\u0000b"}`, nil, "comment"},
		{"POST", decide + "reject", ann, `{"comment":"a\u0000b"}`, nil, "comment"},
	} {
		r := b.api(t, c.method, c.path, c.token, c.body, c.header)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s %s: %s", c.method, c.path, r.raw)
		code, field := errCode(r)
		require.Equal(t, "invalid", code, r.raw)
		require.Equal(t, c.field, field, r.raw)
	}

	list := b.api(t, "GET", "/api/v1/tasks", b.aliceToken, "", nil)
	require.Len(t, list.body["tasks"], 1, "no task was submitted or re-run")
	got := b.api(t, "GET", "/api/v1/tasks/"+taskID, b.aliceToken, "", nil)
	require.Equal(t, "pending", got.body["approvals"].([]any)[0].(map[string]any)["state"], "the approval was not decided")

	t.Run("WebSocket", func(t *testing.T) {
		ws, _, err := b.dialWS(t, ann, nil)
		require.NoError(t, err)
		ws.send(fmt.Sprintf(`{"type":"approve","task_id":%q,"approval_id":%q,"comment":"a\u0000","id":"n"}`, taskID, a.ID))
		m := ws.next()
		require.Equal(t, "invalid", m["code"], "%v", m)
		require.Contains(t, m["message"], "NUL", "the reason, not a server fault")
	})
	t.Run("PageWithoutItsOwnCheck", func(t *testing.T) {
		// The store's refusal itself maps to 422: pages have no field check.
		c := b.browser(t)
		b.login(t, c, "alice@acme.test", testPassword)
		res, _ := b.get(t, c, "/environments?pipeline=%00", nil)
		require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	})
}

// TestEventsAfterBeyondInt4: seq is an int4; an after_seq past it is past
// every event, not a server fault.
func TestEventsAfterBeyondInt4(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)
	r := b.api(t, "GET", "/api/v1/tasks/"+id+"/events?after_seq=9223372036854775807", b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Empty(t, r.body["events"])
}
