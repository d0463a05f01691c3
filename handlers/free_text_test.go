package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// One rule for the free text a person writes, the same through the API,
// the forms and the socket: trimmed, at least the contract's minimum of
// characters that are not spaces where it sets one (an override reason:
// 10), at most 4096 bytes. Before: an override reason of ten spaces was
// accepted (and audited blank), the page's resolve form took any length,
// and a freeze reason stopped at 500 bytes in the API only.
func TestFreeTextOneRule(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := strings.Repeat("x", 4097)

	t.Run("OverrideReasonOfSpacesIs422", func(t *testing.T) {
		for _, reason := range []string{"          ", " \t a b c \n ", long} {
			body := fmt.Sprintf(`{"kind":"deploy","pipeline":"web-service","params":{"app":"shop","version":"1.0.0","env":"staging"},"override":{"reason":%q}}`, reason)
			r := b.api(t, http.MethodPost, "/api/v1/tasks", b.bobToken, body, nil)
			require.Equal(t, http.StatusUnprocessableEntity, r.status, "%q: %s", reason, r.raw)
			_, field := errCode(r)
			require.Equal(t, "override.reason", field)
		}
		r := b.api(t, http.MethodPost, "/api/v1/tasks", b.bobToken,
			`{"kind":"deploy","pipeline":"web-service","params":{"app":"shop","version":"1.0.0","env":"staging"},"override":{"reason":"  release train is late  "}}`, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		o, _ := r.body["override"].(map[string]any)
		require.Equal(t, "release train is late", o["reason"], "stored trimmed")
	})
	t.Run("FreezeReason", func(t *testing.T) {
		r := b.api(t, http.MethodPost, "/api/v1/freezes", b.bobToken,
			fmt.Sprintf(`{"environment":"production","until":"2099-01-01T00:00:00Z","reason":%q}`, strings.Repeat("y", 600)), nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, "a year is too long, not the reason: %s", r.raw)
		_, field := errCode(r)
		require.Equal(t, "until", field)
		r = b.api(t, http.MethodPost, "/api/v1/freezes", b.bobToken,
			fmt.Sprintf(`{"environment":"production","until":"2099-01-01T00:00:00Z","reason":%q}`, long), nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
		_, field = errCode(r)
		require.Equal(t, "reason", field)
	})
	t.Run("ResolveFormIsCappedLikeTheAPI", func(t *testing.T) {
		r := b.api(t, http.MethodPost, "/api/v1/tasks", b.bobToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		id := r.body["id"].(string)
		api := b.api(t, http.MethodPost, "/api/v1/tasks/"+id+"/resolve", b.bobToken, fmt.Sprintf(`{"action":"resolve","comment":%q}`, long), nil)
		require.Equal(t, http.StatusUnprocessableEntity, api.status, api.raw)
		bob := b.browser(t)
		b.login(t, bob, "bob@rival.test", testPassword)
		tok := b.csrfFrom(t, bob, "/tasks/new")
		status := b.postForm(t, bob, "/tasks/"+id+"/resolve", url.Values{"_csrf": {tok}, "action": {"resolve"}, "comment": {long}}, nil)
		require.Equal(t, http.StatusUnprocessableEntity, status, "the form: 422 like the API (not the task's state)")
	})
	t.Run("SocketIsCappedLikeTheAPI", func(t *testing.T) {
		ws, _, err := b.dialWS(t, b.bobToken, nil)
		require.NoError(t, err)
		r := b.api(t, http.MethodPost, "/api/v1/tasks", b.bobToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
		id := r.body["id"].(string)
		ws.send(fmt.Sprintf(`{"type":"resume","task_id":%q,"action":"skip","comment":%q,"id":"r1"}`, id, long))
		m := ws.next()
		require.Equal(t, "error", m["type"])
		require.Equal(t, "invalid", m["code"], m)
	})
}
