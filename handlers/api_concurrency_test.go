package handlers_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The pipelines API says what each pipeline deploys to and its concurrency
// limit; two web-service deploys to one target: the second waits for the
// first, and its JSON says which task it waits for; another target does
// not wait.
func TestConcurrencyThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.api(t, "GET", "/api/v1/pipelines", b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status)
	byName := map[string]map[string]any{}
	for _, p := range r.body["pipelines"].([]any) {
		byName[p.(map[string]any)["name"].(string)] = p.(map[string]any)
	}
	ws := byName["web-service"]
	require.Equal(t, []any{"app", "env"}, ws["target"])
	require.Equal(t, map[string]any{"key": "web-service:{{ .params.app }}:{{ .params.env }}", "policy": "queue"}, ws["concurrency"])
	require.Nil(t, byName["noop"]["concurrency"])
	require.Equal(t, []any{}, byName["noop"]["target"])

	submit := func(env, version string) map[string]any {
		r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken,
			`{"kind":"deploy","pipeline":"web-service","params":{"app":"shop","version":"`+version+`","env":"`+env+`"}}`, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.body)
		return r.body
	}
	first := submit("staging", "1.0.0")
	second := submit("staging", "1.0.1")
	other := submit("production", "1.0.0")
	require.Nil(t, first["blocked_by"])

	// A worker claims the first: the second now waits for it, the other
	// target does not.
	claimed, err := b.store.TaskClaim(t.Context(), "w1", 10, time.Minute)
	require.NoError(t, err)
	var ids []string
	for _, c := range claimed {
		ids = append(ids, c.Task.ID)
	}
	require.ElementsMatch(t, []string{first["id"].(string), other["id"].(string)}, ids)
	r = b.api(t, "GET", "/api/v1/tasks/"+second["id"].(string), b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "pending", r.body["state"])
	require.Equal(t, first["id"], r.body["blocked_by"])
}
