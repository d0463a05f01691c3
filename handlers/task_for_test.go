package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/store"
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

// TestPageOffersWhatTheTableAllows: the run page's buttons and the
// navigation's admin links show exactly for the roles the table lets take
// them.
func TestPageOffersWhatTheTableAllows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hash, err := testPasswordHash()
	require.NoError(t, err)
	for _, u := range []struct {
		email string
		role  auth.Role
	}{{"vic@acme.test", auth.RoleViewer}, {"ann@acme.test", auth.RoleAdmin}} {
		_, err = b.store.UserAdd(t.Context(), store.UserAddParams{Email: u.email, Team: "acme", Role: u.role, PasswordHash: hash})
		require.NoError(t, err)
	}
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	r = b.api(t, "POST", "/api/v1/tasks/"+r.body["id"].(string)+"/pause", b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	page := func(email string) *goquery.Document {
		c := b.browser(t)
		b.login(t, c, email, testPassword)
		res, body := b.get(t, c, "/tasks/"+r.body["id"].(string), nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		return doc
	}
	count := func(d *goquery.Document, sel string) int { return d.Find(sel).Length() }
	for _, tt := range []struct {
		email            string
		act, resume, adm int
	}{
		{"vic@acme.test", 0, 0, 0},
		{"alice@acme.test", 1, 1, 0},
		{"ann@acme.test", 1, 1, 1},
	} {
		d := page(tt.email)
		require.Equal(t, tt.act, count(d, `[data-testid="priority-form"]`), "%s: set priority", tt.email)
		require.Equal(t, tt.act, count(d, `[data-testid="cancel-open"]`), "%s: cancel", tt.email)
		require.Equal(t, tt.resume, count(d, `[data-testid="resume"]`), "%s: resume", tt.email)
		require.Equal(t, tt.adm, count(d, `nav a[href="/webhooks"]`), "%s: webhooks link", tt.email)
		require.Equal(t, tt.adm, count(d, `nav a[href="/audit"]`), "%s: audit link", tt.email)
	}
}
