package handlers_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/artifact"
)

func TestArtifactEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	id := r.body["id"].(string)
	var teamID string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT team_id FROM tasks WHERE id = $1`, id).Scan(&teamID))
	w, err := artifact.New(b.store, 0).Create(t.Context(), id, teamID, 1, "page.html", nil)
	require.NoError(t, err)
	_, _ = w.Write([]byte("<script>alert(1)</script>\nerror: boom\n"))
	m, err := w.Finish()
	require.NoError(t, err)

	got := b.api(t, "GET", "/api/v1/artifacts/"+m.ID, b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, got.status)
	require.Equal(t, "<script>alert(1)</script>\nerror: boom\n", got.raw)
	require.Equal(t, "nosniff", got.header.Get("X-Content-Type-Options"))
	require.Equal(t, `attachment; filename="page.html"`, got.header.Get("Content-Disposition"))
	require.Equal(t, "text/plain; charset=utf-8", got.header.Get("Content-Type"))
	require.Equal(t, `"`+m.SHA256+`"`, got.header.Get("ETag"))
	require.Equal(t, "38", got.header.Get("Content-Length"))

	// A log's "View raw" opens it in the browser: inline, and always as
	// plain text, so the HTML in it shows as text.
	raw := b.api(t, "GET", "/api/v1/artifacts/"+m.ID+"?view=raw", b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, raw.status)
	require.Equal(t, got.raw, raw.raw)
	require.Equal(t, `inline; filename="page.html"`, raw.header.Get("Content-Disposition"))
	require.Equal(t, "text/plain; charset=utf-8", raw.header.Get("Content-Type"))
	require.Equal(t, "nosniff", raw.header.Get("X-Content-Type-Options"))
	bad := b.api(t, "GET", "/api/v1/artifacts/"+m.ID+"?view=html", b.aliceToken, "", nil)
	require.Equal(t, http.StatusUnprocessableEntity, bad.status)
	require.Equal(t, "view", bad.body["error"].(map[string]any)["field"])

	again := b.api(t, "GET", "/api/v1/artifacts/"+m.ID, b.aliceToken, "", map[string]string{"If-None-Match": `"` + m.SHA256 + `"`})
	require.Equal(t, http.StatusNotModified, again.status)

	meta := b.api(t, "GET", "/api/v1/artifacts/"+m.ID+"/meta", b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, meta.status)
	require.Equal(t, m.SHA256, meta.body["sha256"])
	require.Contains(t, meta.body["excerpt"], "2: error: boom")

	for _, path := range []string{"/api/v1/artifacts/" + m.ID, "/api/v1/artifacts/" + m.ID + "/meta"} {
		require.Equal(t, http.StatusNotFound, b.api(t, "GET", path, b.bobToken, "", nil).status, "another team's artifact")
	}
	require.Equal(t, http.StatusNotFound, b.api(t, "GET", "/api/v1/artifacts/not-a-uuid", b.aliceToken, "", nil).status)
	task := b.api(t, "GET", "/api/v1/tasks/"+id, b.aliceToken, "", nil)
	require.Len(t, task.body["artifacts"], 1)
}
