package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/testfactory"
)

// The dashboard links to lists filtered by outcome and finish window: the
// page and the API list exactly those tasks.
func TestTaskListFinishedWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	ids := map[string]string{}
	for _, name := range []string{"inside", "before", "after", "cancelled"} {
		r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop","priority":"high"}`, nil)
		require.Equal(t, http.StatusAccepted, r.status)
		ids[name] = r.body["id"].(string)
	}
	end := func(name, state string, at time.Time) {
		testfactory.Fixture(t, b.pool, `UPDATE tasks SET state = $2, created_at = $3, started_at = $3, finished_at = $3 WHERE id = $1`, ids[name], state, at)
	}
	end("inside", "failed", day.Add(3*time.Hour))
	end("before", "failed", day.Add(-time.Hour))
	end("after", "failed", day.Add(25*time.Hour))
	end("cancelled", "cancelled", day.Add(4*time.Hour))
	// the fixtures made a history without the writes that keep the
	// rollups, whose created_min the finish window's scan starts from
	var team string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT team_id::text FROM tasks WHERE id = $1`, ids["inside"]).Scan(&team))
	require.NoError(t, b.store.RollupRebuild(t.Context(), team))

	q := url.Values{"state": {"failed"}, "finished_after": {day.Format(time.RFC3339)}, "finished_before": {day.AddDate(0, 0, 1).Format(time.RFC3339)}}
	r := b.api(t, "GET", "/api/v1/tasks?"+q.Encode(), b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status)
	tasks := r.body["tasks"].([]any)
	require.Len(t, tasks, 1)
	require.Equal(t, ids["inside"], tasks[0].(map[string]any)["id"])

	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	res, body := b.get(t, c, "/tasks?"+q.Encode(), nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, 1, doc.Find(`[data-testid="task-row"]`).Length())
	require.Equal(t, 1, doc.Find(`#task-row-`+ids["inside"]).Length())
	require.Contains(t, doc.Find(`[data-testid="linked-filters"]`).Text(), "finished before 2026-11-21T00:00:00Z")

	// Pending tasks of one priority (the dashboard's pending counts).
	r = b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop","priority":"low"}`, nil)
	require.Equal(t, http.StatusAccepted, r.status)
	r = b.api(t, "GET", "/api/v1/tasks?state=pending&priority=low", b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Len(t, r.body["tasks"].([]any), 1)

	for _, bad := range []string{"finished_after=yesterday", "finished_before=2026-13-01", "priority=urgent"} {
		r := b.api(t, "GET", "/api/v1/tasks?"+bad, b.aliceToken, "", nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, bad)
		require.Equal(t, strings.Split(bad, "=")[0], r.body["error"].(map[string]any)["field"], bad)
	}
}
