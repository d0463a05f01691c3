package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/testfactory"
)

// A task whose cancel is accepted but not yet carried out shows the
// cancel's outcome on the run page and through its socket: "cancelling",
// never a plain paused card with Resume or a failed step's Retry (the
// guided-failure race of issue 34 left such a task paused with
// cancel_requested). Before, the page showed the paused card and its
// decisions, and a running task's cancel left the Pause button up.
func TestCancelRequestedShowsCancelling(t *testing.T) {
	t.Parallel()
	b := setup(t)
	alice := b.browser(t)
	b.login(t, alice, "alice@acme.test", testPassword)

	t.Run("PausedWithCancelRequested", func(t *testing.T) {
		id := b.submitDeploy(t, "noop")
		testfactory.Fixture(t, b.pool, `UPDATE tasks SET state = 'paused', started_at = now(), cancel_requested_at = now(),
			failed_step = '{"index":1,"name":"noop","error":"boom","attempt":1}', decision_expires_at = now() + interval '1 hour' WHERE id = $1`, id)
		res, body := b.get(t, alice, "/tasks/"+id, nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		require.Equal(t, 1, doc.Find(`[data-testid="cancel-requested"]`).Length(), "says it is being cancelled")
		require.Equal(t, 1, doc.Find(`[data-testid="cancelling-badge"]`).Length())
		for _, gone := range []string{"paused-card", "resume", "decision-card", "retry-open", "pause"} {
			require.Zero(t, doc.Find(`[data-testid="`+gone+`"]`).Length(), "no %s while the cancel is pending", gone)
		}
		_, body = b.get(t, alice, "/tasks", nil)
		doc, err = goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		row := doc.Find("#task-row-" + id)
		require.Equal(t, 1, row.Length(), "the list shows the task")
		require.Equal(t, 1, row.Find(`[data-testid="cancelling-badge"]`).Length(), "and that it is being cancelled")
	})
	t.Run("RunningTaskSocketShowsTheCancel", func(t *testing.T) {
		id := b.submitDeploy(t, "noop")
		testfactory.Fixture(t, b.pool, `UPDATE tasks SET state = 'running', started_at = now() WHERE id = $1`, id)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+"/tasks/"+id+"/ws",
			&websocket.DialOptions{HTTPClient: alice, HTTPHeader: http.Header{"Origin": {b.srv.URL}}})
		require.NoError(t, err)
		defer ws.CloseNow()
		ws.SetReadLimit(4 << 20)
		_, first, err := ws.Read(ctx)
		require.NoError(t, err)
		require.Contains(t, string(first), `data-testid="pause"`, "a running deploy offers Pause")

		r := b.api(t, http.MethodPost, "/api/v1/tasks/"+id+"/cancel", b.aliceToken, "", nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		for {
			_, frame, err := ws.Read(ctx)
			require.NoError(t, err, "the socket pushes the cancel")
			f := string(frame)
			if strings.Contains(f, `id="task-control"`) {
				require.Contains(t, f, `data-testid="cancel-requested"`)
				require.NotContains(t, f, `data-testid="pause"`)
				break
			}
		}
	})
}
