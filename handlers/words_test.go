package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/testfactory"
	"flightdeck/workflow/pipeline"
)

const wordsEnvironments = `environments:
  production:
    freeze:
      - {from: "22:00", to: "06:00", reason: "nightly quiet"}
`

// TestWordsPeopleRead: the pages say where a task stands in people's
// words over the real router: a paused header says paused without a
// running clock, a completion with a skipped step and a rejection say so
// on the list and the run page (the API's state unchanged), the audit log
// is sentences with the raw detail behind a toggle, its API answers CSV,
// and a nightly window is one freeze row.
func TestWordsPeopleRead(t *testing.T) {
	t.Parallel()
	rules, err := pipeline.ParseEnvironments("environments.yaml", []byte(wordsEnvironments))
	require.NoError(t, err)
	catalog, err := pipeline.NewCatalog(pipeline.Builtin()...)
	require.NoError(t, err)
	catalog.SetEnvironments(rules)
	b := setupCatalog(t, nil, catalog)
	c := b.browser(t)
	b.login(t, c, "bob@rival.test", testPassword)
	page := func(path string) *goquery.Document {
		t.Helper()
		res, body := b.get(t, c, path, nil)
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		return doc
	}
	submit := func(pl string) string {
		r := b.api(t, "POST", "/api/v1/tasks", b.bobToken, `{"kind":"deploy","pipeline":"`+pl+`"}`, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		return r.body["id"].(string)
	}

	t.Run("PausedHeader", func(t *testing.T) {
		id := submit("noop")
		testfactory.Fixture(t, b.pool, `UPDATE tasks SET state = 'paused', started_at = now() - interval '75 seconds' WHERE id = $1`, id)
		h := page("/tasks/" + id).Find("#task-header")
		require.Equal(t, "paused, waiting for someone to resume it", h.Find(`[data-testid="task-clock-label"]`).Text())
		require.Equal(t, 0, h.Find(`[data-testid="clock"]`).Length(), "no clock counts while nothing runs")
		require.NotContains(t, h.Text(), "running for")
	})

	t.Run("SkippedAndRejected", func(t *testing.T) {
		skipped := submit("approval-demo")
		testfactory.Completed(t, b.store, skipped)
		testfactory.Fixture(t, b.pool, `UPDATE task_steps SET state = 'skipped' WHERE task_id = $1 AND name = 'prepare'`, skipped)
		rejected := submit("noop")
		testfactory.Fixture(t, b.pool, `UPDATE tasks SET state = 'cancelled', finished_at = now(),
			error = 'deploy to production rejected by pat@rival.test' WHERE id = $1`, rejected)

		list := page("/tasks")
		badge := func(doc *goquery.Selection) (state, word string) {
			s := doc.Find(`[data-testid="state-badge"]`).First()
			return s.AttrOr("data-state", ""), strings.TrimSpace(s.Text())
		}
		st, word := badge(list.Find("#task-row-" + skipped))
		require.Equal(t, "completed", st)
		require.Equal(t, "completed with 1 step skipped", word)
		st, word = badge(list.Find("#task-row-" + rejected))
		require.Equal(t, "cancelled", st, "the state stays the API's")
		require.Equal(t, "rejected", word)

		st, word = badge(page("/tasks/" + skipped).Find("#task-state"))
		require.Equal(t, "completed", st)
		require.Equal(t, "completed with 1 step skipped", word)
		_, word = badge(page("/tasks/" + rejected).Find("#task-state"))
		require.Equal(t, "rejected", word)
		r := b.api(t, "GET", "/api/v1/tasks/"+rejected, b.bobToken, "", nil)
		require.Equal(t, "cancelled", r.body["state"])
	})

	t.Run("AuditSentencesAndCSV", func(t *testing.T) {
		id := submit("approval-demo")
		r := b.api(t, "POST", "/api/v1/tasks/"+id+"/cancel", b.bobToken, "", nil)
		require.Less(t, r.status, 300, r.raw)
		entry := page("/audit?type=task.cancelled").Find(`[data-testid="audit-entry"]`).First()
		require.Contains(t, entry.Find(`[data-testid="audit-sentence"]`).Text(), "bob@rival.test cancelled the task")
		raw := entry.Find(`details [data-testid="audit-detail"]`)
		require.Equal(t, 1, raw.Length(), "the raw detail sits behind a toggle")
		require.Contains(t, raw.Text(), `"state"`)

		r = b.api(t, "GET", "/api/v1/audit?format=csv", b.bobToken, "", nil)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		require.True(t, strings.HasPrefix(r.header.Get("Content-Type"), "text/csv"), r.header.Get("Content-Type"))
		lines := strings.Split(strings.TrimSpace(r.raw), "\n")
		require.Equal(t, "id,at,actor,type,task_id,detail", lines[0])
		require.Regexp(t, `^[0-9]+,[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z,bob@rival.test,task.cancelled,`+id+`,`, lines[1])
		r = b.api(t, "GET", "/api/v1/audit?format=xml", b.bobToken, "", nil)
		code, field := errCode(r)
		require.Equal(t, http.StatusUnprocessableEntity, r.status)
		require.Equal(t, "invalid", code)
		require.Equal(t, "format", field)
	})

	t.Run("RecurringFreezeOnce", func(t *testing.T) {
		rows := page("/environments").Find(`[data-testid="freeze"][data-source="rule"]`)
		require.Equal(t, 1, rows.Length(), "a nightly window is one row, not one per night")
		require.Equal(t, "nightly 22:00–06:00, every day", rows.Find(`[data-testid="freeze-recurring"]`).Text())
		// The API still lists each occurrence, with RFC 3339 times.
		r := b.api(t, "GET", "/api/v1/freezes", b.bobToken, "", nil)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		require.Greater(t, strings.Count(r.raw, `"nightly quiet"`), 1)
	})
}
