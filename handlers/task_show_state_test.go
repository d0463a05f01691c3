package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/testfactory"
)

// TestStuckAndResolvedTasksReadRight: a task in needs_attention does not
// say it runs and offers only what works then (the admin's retry and
// resolve, not Cancel or Set priority); once resolved, the resolution is
// a note, not an error.
func TestStuckAndResolvedTasksReadRight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.api(t, "POST", "/api/v1/tasks", b.bobToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	require.Equal(t, http.StatusAccepted, r.status)
	id := r.body["id"].(string)
	testfactory.Fixture(t, b.pool, `UPDATE tasks SET state = 'needs_attention', started_at = now() - interval '1 hour' WHERE id = $1`, id)
	c := b.browser(t)
	b.login(t, c, "bob@rival.test", testPassword)

	header := func() *goquery.Selection {
		res, body := b.get(t, c, "/tasks/"+id, nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		return doc.Find(`#task-header`)
	}
	h := header()
	require.NotContains(t, h.Text(), "running for")
	require.Contains(t, h.Find(".run-meta").Text(), "stopped")
	require.Equal(t, 0, h.Find(`[data-testid="priority-form"]`).Length(), "set priority does nothing in needs_attention")
	require.Equal(t, 0, h.Find(`[data-testid="cancel-open"]`).Length(), "cancel is refused in needs_attention")
	require.Equal(t, 1, h.Find(`[data-testid="resolve-resolve"]`).Length())

	tok := b.csrfFrom(t, c, "/tasks/"+id)
	require.Equal(t, http.StatusSeeOther, b.postForm(t, c, "/tasks/"+id+"/resolve",
		url.Values{"_csrf": {tok}, "action": {"resolve"}, "comment": {"the old version kept serving"}}, nil))
	h = header()
	require.Equal(t, "failed", h.Find(`#task-state [data-testid="state-badge"]`).AttrOr("data-state", ""))
	require.Equal(t, 0, h.Find(`[data-testid="task-error"]`).Length(), "a resolution is not an error")
	require.Equal(t, "Resolved by bob@rival.test: “the old version kept serving”", h.Find(`[data-testid="task-resolution"]`).Text())
	require.Contains(t, h.Find(".run-meta").Text(), "took")
}
