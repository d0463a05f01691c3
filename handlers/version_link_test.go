package handlers_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/pipeline"
)

// A pipeline's links (links.version, links.compare) reach the run page:
// the version links to its release, and a second deploy links the change
// from the version it replaces.
func TestRunPageLinksTheVersion(t *testing.T) {
	t.Parallel()
	pl, err := pipeline.Parse("linked.yaml", []byte(`name: linked
params:
  - {name: app, type: string, pattern: "^[a-z]+$", required: true}
  - {name: version, type: string, pattern: "^[0-9.]+$", required: true}
target: [app]
links:
  version: "http://127.0.0.1:3000/{{ .params.app }}/releases/tag/v{{ .params.version }}"
  compare: "http://127.0.0.1:3000/{{ .params.app }}/compare/{{ .from.version }}...{{ .to.version }}"
steps:
  - {name: release, action: test.record}
`))
	require.NoError(t, err)
	sb := setupRecording(t, pl)
	deploy := func(version string) string {
		r := sb.api(t, http.MethodPost, "/api/v1/tasks", sb.aliceToken,
			`{"kind":"deploy","pipeline":"linked","params":{"app":"shop","version":"`+version+`"}}`, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		id := r.body["id"].(string)
		sb.waitState(t, id, "completed")
		return id
	}
	first := deploy("1.0.0")
	second := deploy("1.1.0")
	c := sb.browser(t)
	sb.login(t, c, "alice@acme.test", testPassword)

	res, body := sb.get(t, c, "/tasks/"+first, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, `href="http://127.0.0.1:3000/shop/releases/tag/v1.0.0"`)
	require.NotContains(t, body, `data-testid="compare-link"`, "a first deploy has nothing to compare")

	res, body = sb.get(t, c, "/tasks/"+second, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, `href="http://127.0.0.1:3000/shop/releases/tag/v1.1.0"`)
	require.Contains(t, body, `href="http://127.0.0.1:3000/shop/compare/1.0.0...1.1.0"`)
}

// The Approvals inbox links the version waiting and the change it makes,
// beside the version change and "What changes".
func TestInboxLinksTheVersionAndTheChange(t *testing.T) {
	t.Parallel()
	pl, err := pipeline.Parse("gated.yaml", []byte(`name: linked-gated
params:
  - {name: app, type: string, pattern: "^[a-z]+$", required: true}
  - {name: version, type: string, pattern: "^[0-9.]+$", required: true}
target: [app]
links:
  version: "http://127.0.0.1:3000/{{ .params.app }}/releases/tag/v{{ .params.version }}"
  compare: "http://127.0.0.1:3000/{{ .params.app }}/compare/{{ .from.version }}...{{ .to.version }}"
steps:
  - name: release
    action: test.record
    approval: {when: '{{ eq .params.version "2.0.0" }}', roles: [approver, admin]}
`))
	require.NoError(t, err)
	sb := setupRecording(t, pl)
	submit := func(version string) string {
		r := sb.api(t, http.MethodPost, "/api/v1/tasks", sb.aliceToken,
			`{"kind":"deploy","pipeline":"linked-gated","params":{"app":"shop","version":"`+version+`"}}`, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		return r.body["id"].(string)
	}
	sb.waitState(t, submit("1.0.0"), "completed")
	sb.waitState(t, submit("2.0.0"), "awaiting_approval")
	_, ann := sb.approver(t)
	res, body := sb.get(t, ann, "/approvals", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, `href="http://127.0.0.1:3000/shop/releases/tag/v2.0.0"`)
	require.Contains(t, body, `href="http://127.0.0.1:3000/shop/compare/1.0.0...2.0.0"`)
}
