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
)

func TestTaskListFiltersAndLiveRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	submit := func(pipeline string) string { return b.submitDeploy(t, pipeline) }
	noop := submit("noop")
	demo := submit("approval-demo")
	b.api(t, "POST", "/api/v1/tasks/"+demo+"/cancel", b.aliceToken, "", nil)

	page := func(query string) *goquery.Document {
		res, body := b.get(t, c, "/tasks"+query, nil)
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		return doc
	}
	doc := page("")
	require.Equal(t, 2, doc.Find(`[data-testid="task-row"]`).Length())
	require.Regexp(t, `^/tasks/ws\?since=[^&]+&rows=`+demo+","+noop+"$", doc.Find(`[ws-connect]`).AttrOr("ws-connect", ""), "the rows shown, newest first")

	doc = page("?state=cancelled")
	require.Equal(t, 1, doc.Find(`[data-testid="task-row"]`).Length())
	require.Equal(t, "task-row-"+demo, doc.Find(`[data-testid="task-row"]`).AttrOr("id", ""))
	require.Equal(t, "cancelled", doc.Find(`[data-testid="filter-state"] option[selected]`).AttrOr("value", ""))
	require.Regexp(t, `^/tasks/ws\?state=cancelled&since=[^&]+&rows=`+demo+"$", doc.Find(`[ws-connect]`).AttrOr("ws-connect", ""))

	doc = page("?pipeline=noop&created_by=alice%40acme.test")
	require.Equal(t, "task-row-"+noop, doc.Find(`[data-testid="task-row"]`).AttrOr("id", ""))
	doc = page("?created_by=nobody%40acme.test")
	require.Contains(t, doc.Find(`[data-testid="task-list-empty"]`).Text(), "No task matches")
	res, _ := b.get(t, c, "/tasks?state=bogus", nil)
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)

	// The list's socket re-sends a changed row and announces new tasks once.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+"/tasks/ws",
		&websocket.DialOptions{HTTPClient: c, HTTPHeader: http.Header{"Origin": {b.srv.URL}}})
	require.NoError(t, err)
	defer ws.CloseNow()
	// The subscription starts with the upgrade; a ping round trip through
	// the server is not available on this socket, so change a task until
	// its row arrives.
	var frame string
	for !strings.Contains(frame, `id="task-row-`+noop+`"`) {
		b.api(t, "PATCH", "/api/v1/tasks/"+noop, b.aliceToken, `{"priority":"hotfix"}`, nil)
		_, f, err := ws.Read(ctx)
		require.NoError(t, err)
		frame = string(f)
	}
	require.Contains(t, frame, "hotfix")
	// next reads frames until one contains want, checking each on the way.
	next := func(want string, check func(string)) {
		for {
			_, f, err := ws.Read(ctx)
			require.NoError(t, err)
			check(string(f))
			if strings.Contains(string(f), want) {
				return
			}
		}
	}
	submit("noop")
	submit("noop")
	next(`data-testid="new-tasks"`, func(string) {})
	// Bob's changes never reach alice's list, and the notice comes once.
	r := b.api(t, "POST", "/api/v1/tasks", b.bobToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	require.Equal(t, http.StatusAccepted, r.status)
	rival := r.body["id"].(string)
	b.api(t, "PATCH", "/api/v1/tasks/"+rival, b.bobToken, `{"priority":"high"}`, nil)
	b.api(t, "PATCH", "/api/v1/tasks/"+noop, b.aliceToken, `{"priority":"low"}`, nil)
	next(`data-testid="task-priority">low<`, func(f string) {
		require.NotContains(t, f, rival)
		require.NotContains(t, f, `data-testid="new-tasks"`)
	})
}

func TestTaskListColumns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"web-service","params":{"app":"shop","version":"1.2.3","env":"production"}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	id := r.body["id"].(string)

	res, body := b.get(t, c, "/tasks", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	var heads []string
	doc.Find(`[data-testid="task-list"] th`).Each(func(_ int, s *goquery.Selection) { heads = append(heads, s.Text()) })
	require.Equal(t, []string{"Task", "Target", "Version", "State", "Duration", "Who", "When"}, heads)
	row := doc.Find("#task-row-" + id)
	require.Equal(t, "shop · production", strings.TrimSpace(row.Find(`[data-testid="task-target"]`).Text()))
	require.Equal(t, "app=shop, env=production", row.Find(`[data-testid="task-target"] span`).AttrOr("title", ""))
	require.Equal(t, "1.2.3", strings.TrimSpace(row.Find(`[data-testid="task-version"]`).Text()))
	require.Equal(t, "not started", strings.TrimSpace(row.Find(`[data-testid="task-duration"]`).Text()))
	require.Equal(t, "alice@acme.test", row.Find(`[data-testid="task-who"]`).Text())
	when := row.Find(`[data-testid="task-when"] time`)
	require.Equal(t, "just now", when.Text())
	require.Regexp(t, `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$`, when.AttrOr("title", ""), "exact on hover")
	require.Equal(t, id, row.Find(`[data-testid="task-id"]`).Text(), "the full id")
	require.Equal(t, id, row.Find(`[data-testid="copy-id"]`).AttrOr("data-copy", ""))
}

// TestTaskListSocketCatchesUp: a list socket that (re)connects sends the
// page's rows as they are now, so a row that changed while no socket
// listened does not stay stale; it never sends another team's row.
func TestTaskListSocketCatchesUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	var ids []string
	for range 2 {
		r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		ids = append(ids, r.body["id"].(string))
	}
	changed, same := ids[0], ids[1]
	_, body := b.get(t, c, "/tasks", nil)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	socket := doc.Find(`[ws-connect]`).AttrOr("ws-connect", "")
	require.Contains(t, socket, changed)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	dial := func(path string) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+path,
			&websocket.DialOptions{HTTPClient: c, HTTPHeader: http.Header{"Origin": {b.srv.URL}}})
	}
	first := func(ws *websocket.Conn) *goquery.Document {
		_, f, err := ws.Read(ctx)
		require.NoError(t, err)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader("<table>" + string(f) + "</table>"))
		require.NoError(t, err)
		return doc
	}

	ws, _, err := dial(socket)
	require.NoError(t, err)
	rows := first(ws)
	require.Equal(t, "pending", rows.Find("#task-row-"+changed).AttrOr("data-state", ""), "the rows as they are, at once")
	require.Equal(t, 1, rows.Find("#task-row-"+same).Length())
	require.NoError(t, ws.Close(websocket.StatusGoingAway, ""))

	// While no socket listens, a row changes.
	require.Equal(t, http.StatusAccepted, b.api(t, "POST", "/api/v1/tasks/"+changed+"/cancel", b.aliceToken, "", nil).status)
	ws, _, err = dial(socket)
	require.NoError(t, err)
	defer ws.CloseNow()
	rows = first(ws)
	require.Equal(t, "cancelled", rows.Find("#task-row-"+changed).AttrOr("data-state", ""), "the reconnect catches up")

	// Another team's id names no row; too many ids are refused.
	rival := b.api(t, "POST", "/api/v1/tasks", b.bobToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)
	other, _, err := dial("/tasks/ws?rows=" + rival + ",not-an-id," + same)
	require.NoError(t, err)
	defer other.CloseNow()
	rows = first(other)
	require.Equal(t, 1, rows.Find("#task-row-"+same).Length())
	require.Equal(t, 0, rows.Find("#task-row-"+rival).Length())
	_, res, err := dial("/tasks/ws?rows=" + strings.Repeat(same+",", 200) + same)
	require.Error(t, err)
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
}

// TestTaskListNoticeCatchesUp: the list's notice of new tasks counts from
// when the page loaded, not from when its socket (re)connected, so tasks
// submitted while no socket listened are announced on the reconnect.
func TestTaskListNoticeCatchesUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	shown := b.submitDeploy(t, "noop")
	_, body := b.get(t, c, "/tasks?pipeline=noop", nil)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	socket := doc.Find(`[ws-connect]`).AttrOr("ws-connect", "")
	require.Contains(t, socket, "since=")

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	dial := func(path string) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+path,
			&websocket.DialOptions{HTTPClient: c, HTTPHeader: http.Header{"Origin": {b.srv.URL}}})
	}
	// While no socket listens (before the first connect, or between a drop
	// and the reconnect: the same to the server), a task is submitted.
	b.submitDeploy(t, "noop")
	ws, _, err := dial(socket)
	require.NoError(t, err)
	defer ws.CloseNow()
	for sawRow, sawNotice := false, false; !sawRow || !sawNotice; {
		_, f, err := ws.Read(ctx)
		require.NoError(t, err, "the reconnect announces the task submitted while the socket was down")
		sawRow = sawRow || strings.Contains(string(f), `id="task-row-`+shown+`"`)
		sawNotice = sawNotice || strings.Contains(string(f), `data-testid="new-tasks"`)
	}

	// A load time that is not one is refused before the upgrade.
	_, res, err := dial("/tasks/ws?since=yesterday&rows=" + shown)
	require.Error(t, err)
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
}

// submitDeploy submits a deploy of pipeline as alice and returns its id.
func (b *testBundle) submitDeploy(t *testing.T, pipeline string) string {
	t.Helper()
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"`+pipeline+`"}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	return r.body["id"].(string)
}
