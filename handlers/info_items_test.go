package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/handlers"
	"flightdeck/internal/testfactory"
)

// The probe's info items (issue 38, item 6) over the API and the socket.
func TestProbeInfoItems(t *testing.T) {
	t.Parallel()
	rb := setupRules(t)

	// Before: the 202 said "approvals":[] (contract §9: it lists the
	// pending approval, with its id, kind and required count).
	r := rb.submit(t, "alice", "production", "1.0.0", "")
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	require.Equal(t, "awaiting_approval", r.body["state"])
	approvals, _ := r.body["approvals"].([]any)
	require.Len(t, approvals, 1, r.raw)
	a := approvals[0].(map[string]any)
	require.NotEmpty(t, a["id"])
	require.Equal(t, "environment", a["kind"])
	require.EqualValues(t, 2, a["required"])
	require.Equal(t, "pending", a["state"])
	taskID, approvalID := r.body["id"].(string), a["id"].(string)

	t.Run("SameReviewerTwiceIsToldSo", func(t *testing.T) {
		path := "/api/v1/tasks/" + taskID + "/approvals/" + approvalID + "/approve"
		r := rb.api(t, http.MethodPost, path, rb.tokens["pat"], `{"comment":"looks good"}`, nil)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		r = rb.api(t, http.MethodPost, path, rb.tokens["pat"], `{}`, nil)
		require.Equal(t, http.StatusConflict, r.status, r.raw)
		require.Contains(t, r.raw, "you already approved", "not 'not pending' while it is pending")
	})
	t.Run("AuditDecisionsOneVocabulary", func(t *testing.T) {
		// A step approval decided beside the environment's one above.
		s := rb.api(t, http.MethodPost, "/api/v1/tasks", rb.tokens["alice"], `{"kind":"deploy","pipeline":"approval-demo","params":{}}`, nil)
		require.Equal(t, http.StatusAccepted, s.status, s.raw)
		step := testfactory.AwaitingApproval(t, rb.store, s.body["id"].(string), []string{"approver", "admin"})
		d := rb.api(t, http.MethodPost, "/api/v1/tasks/"+s.body["id"].(string)+"/approvals/"+step.ID+"/approve", rb.tokens["pat"], `{}`, nil)
		require.Equal(t, http.StatusOK, d.status, d.raw)
		r := rb.api(t, http.MethodGet, "/api/v1/audit?type=approval.decided", rb.tokens["ann"], "", nil)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		kinds := map[string]string{}
		for _, e := range r.body["entries"].([]any) {
			detail := e.(map[string]any)["detail"].(map[string]any)
			kinds[detail["kind"].(string)] = detail["decision"].(string)
		}
		require.Equal(t, map[string]string{"environment": "approve", "step": "approve"}, kinds)
	})
	t.Run("PromoteTargetOfTheWrongTypeIs422", func(t *testing.T) {
		for body, field := range map[string]string{
			`{"pipeline":"svc","target":{"app":5},"from":"staging"}`:        "target.app",
			`{"pipeline":"svc","target":{"app":["shop"]},"from":"staging"}`: "target.app",
			`{"pipeline":"svc","target":"shop","from":"staging"}`:           "target",
		} {
			r := rb.api(t, http.MethodPost, "/api/v1/environments/promote", rb.tokens["alice"], body, nil)
			require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s: %s", body, r.raw)
			code, f := errCode(r)
			require.Equal(t, "invalid", code)
			require.Equal(t, field, f, body)
		}
	})
	t.Run("SocketPauseWithoutTaskIsInvalid", func(t *testing.T) {
		ws, _, err := rb.dialWS(t, rb.tokens["alice"], nil)
		require.NoError(t, err)
		for _, typ := range []string{"pause", "resume", "cancel"} {
			ws.send(`{"type":"` + typ + `","id":"p1"}`)
			m := ws.next()
			require.Equal(t, "error", m["type"], typ)
			require.Equal(t, "invalid", m["code"], "%s: %v", typ, m)
		}
	})
}

// The socket's origin check compares the scheme too: a page served over
// plain HTTP on the same host and port (what a network attacker can
// forge) is not the HTTPS origin, and the reverse. Before, only the host
// was compared.
func TestSocketOriginComparesTheScheme(t *testing.T) {
	t.Parallel()
	b := setup(t)
	host := strings.TrimPrefix(b.srv.URL, "http://")
	for origin, want := range map[string]int{
		"http://" + host:  http.StatusSwitchingProtocols,
		"https://" + host: http.StatusForbidden,
		"ws://" + host:    http.StatusForbidden,
	} {
		_, res, err := b.dialWS(t, b.aliceToken, http.Header{"Origin": {origin}})
		require.NotNil(t, res, origin)
		require.Equal(t, want, res.StatusCode, "%s: %v", origin, err)
	}
	// Behind a TLS proxy that says so, the HTTPS origin is this server's.
	_, res, err := b.dialWS(t, b.aliceToken, http.Header{"Origin": {"https://" + host}, "X-Forwarded-Proto": {"https"}})
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, res.StatusCode)
}

// Bidirectional controls in what people write (U+202E and the others)
// are shown as escapes in the task, the audit page and its CSV, so a line
// reads as it was written; a CSV cell starting with TAB or CR is quoted
// like one starting with =. Before, they were shown as-is.
func TestBidiControlsAreShownEscaped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reason := "release \u202Eexe.tnemhcatta\u202C for \u2066incident\u2069 \u200F4711"
	r := b.api(t, http.MethodPost, "/api/v1/tasks", b.bobToken,
		`{"kind":"deploy","pipeline":"web-service","params":{"app":"shop","version":"1.0.0","env":"staging"},"override":{"reason":"`+reason+`"}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	shown := r.body["override"].(map[string]any)["reason"].(string)
	require.Equal(t, `release \u202eexe.tnemhcatta\u202c for \u2066incident\u2069 \u200f4711`, shown)

	bob := b.browser(t)
	b.login(t, bob, "bob@rival.test", testPassword)
	for _, path := range []string{"/audit", "/audit?format=csv", "/tasks/" + r.body["id"].(string)} {
		res, body := b.get(t, bob, path, nil)
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.Contains(t, body, "incident", path)
		require.False(t, strings.ContainsAny(body, "\u202A\u202B\u202C\u202D\u202E\u2066\u2067\u2068\u2069\u200E\u200F"), "%s shows a bidi control", path)
	}
	for in, want := range map[string]string{
		"\tcmd": "'\tcmd", "\rcmd": "'\rcmd", "=1+1": "'=1+1", "-2": "'-2", "ok": "ok", "a\u202Eb": `a\u202eb`,
	} {
		require.Equal(t, want, handlers.CSVSafe(in), "%q", in)
	}
}
