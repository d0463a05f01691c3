package handlers_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
)

// TestActsRefusedByTheTable: every request that acts on a task is refused
// to a role the table (task.May) leaves out, with the contract's 403 body
// naming the roles that may; another team's task stays a 404.
func TestActsRefusedByTheTable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	viewer := b.tokenFor(t, "vic@acme.test", auth.RoleViewer)
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	path := "/api/v1/tasks/" + r.body["id"].(string)

	const deployers = "your role does not allow this: it needs the role deployer, approver or admin"
	const admins = "your role does not allow this: it needs the role admin"
	for _, tt := range []struct {
		name, method, path, token, body, message string
	}{
		{"ViewerCancels", "POST", path + "/cancel", viewer, "", deployers},
		{"ViewerPauses", "POST", path + "/pause", viewer, "", deployers},
		{"ViewerSetsPriority", "PATCH", path, viewer, `{"priority":"high"}`, deployers},
		{"ViewerReruns", "POST", path + "/rerun", viewer, "", deployers},
		{"ViewerAsksForAnExplanation", "POST", path + "/explain", viewer, "", deployers},
		{"ViewerAnswersAnAgent", "POST", path + "/questions/q1/answer", viewer, `{"text":"yes"}`, deployers},
		{"ViewerResolves", "POST", path + "/resolve", viewer, `{"action":"retry"}`, admins},
		{"DeployerResolves", "POST", path + "/resolve", b.aliceToken, `{"action":"resolve"}`, admins},
		{"DeployerListsWebhooks", "GET", "/api/v1/webhooks", b.aliceToken, "", admins},
		{"DeployerCreatesAFreeze", "POST", "/api/v1/freezes", b.aliceToken,
			`{"environment":"production","until":"2030-01-02T00:00:00Z","reason":"holidays"}`, admins},
		{"DeployerReadsTheAudit", "GET", "/api/v1/audit", b.aliceToken, "", admins},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := b.api(t, tt.method, tt.path, tt.token, tt.body, nil)
			require.Equal(t, http.StatusForbidden, r.status, r.raw)
			code, _ := errCode(r)
			require.Equal(t, "forbidden", code)
			require.Equal(t, tt.message, r.body["error"].(map[string]any)["message"])
		})
	}
	r = b.api(t, "POST", path+"/cancel", b.bobToken, "", nil)
	require.Equal(t, http.StatusNotFound, r.status, "another team's task does not exist for an admin of that team")
	r = b.api(t, "POST", path+"/cancel", b.aliceToken, "", nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
}
