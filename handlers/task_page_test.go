package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

func TestSubmitFormAndTaskPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)

	res, body := b.get(t, c, "/tasks/new?pipeline=web-service", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, 1, doc.Find(`[data-testid="field-app"]`).Length(), "a field per parameter")
	require.Equal(t, 2, doc.Find(`[data-testid="field-env"] option`).Length(), "enum as a select")
	tok := doc.Find(`input[name="_csrf"]`).First().AttrOr("value", "")

	post := func(v url.Values) (*http.Response, *goquery.Document) {
		v.Set("_csrf", tok)
		res, err := c.PostForm(b.srv.URL+"/tasks", v)
		require.NoError(t, err)
		defer res.Body.Close()
		doc, err := goquery.NewDocumentFromReader(res.Body)
		require.NoError(t, err)
		return res, doc
	}
	res, doc = post(url.Values{"pipeline": {"web-service"}, "app": {"Bad App!"}, "version": {"1.0"}, "env": {"staging"}})
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Contains(t, doc.Find(`[data-testid="error-app"]`).Text(), "must match")
	require.Equal(t, "Bad App!", doc.Find(`[data-testid="field-app"]`).AttrOr("value", ""), "the value is kept")
	require.Equal(t, 0, countTasks(t, b))

	res, _ = post(url.Values{"pipeline": {"noop"}, "priority": {"high"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	loc := res.Header.Get("Location")
	require.Regexp(t, `^/tasks/[0-9a-f-]{36}$`, loc)

	res, body = b.get(t, c, loc, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	doc, err = goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, "pending", doc.Find(`#task-state [data-testid="state-badge"]`).AttrOr("data-state", ""))
	require.Equal(t, loc+"/ws", doc.Find(`[data-testid="task-live"]`).AttrOr("ws-connect", ""))
	require.Equal(t, 1, doc.Find(`[data-testid="cancel-confirm"]`).Length())
	require.GreaterOrEqual(t, doc.Find(`[data-testid="event-row"]`).Length(), 1)

	// Bob cannot see it.
	bob := b.browser(t)
	b.login(t, bob, "bob@rival.test", testPassword)
	res, _ = b.get(t, bob, loc, nil)
	require.Equal(t, http.StatusNotFound, res.StatusCode)

	// The page's socket pushes fragments and takes the cancel button.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+loc+"/ws",
		&websocket.DialOptions{HTTPClient: c, HTTPHeader: http.Header{"Origin": {b.srv.URL}}})
	require.NoError(t, err)
	defer ws.CloseNow()
	ws.SetReadLimit(4 << 20)
	_, frame, err := ws.Read(ctx)
	require.NoError(t, err)
	require.Contains(t, string(frame), `id="task-header"`)
	require.Contains(t, string(frame), `id="task-events"`)
	require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(`{"type":"cancel","HEADERS":{"HX-Request":"true"}}`)))
	sawFlash, sawCancelled := false, false
	for !sawFlash || !sawCancelled {
		_, frame, err := ws.Read(ctx)
		require.NoError(t, err)
		s := string(frame)
		if strings.Contains(s, `id="flash"`) && strings.Contains(s, "Cancel requested.") {
			sawFlash = true
		}
		if strings.Contains(s, `id="task-header"`) && strings.Contains(s, `data-state="cancelled"`) {
			sawCancelled = true
		}
	}

	// Bob's socket to it is refused.
	_, res, err = websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+loc+"/ws",
		&websocket.DialOptions{HTTPClient: bob, HTTPHeader: http.Header{"Origin": {b.srv.URL}}})
	require.Error(t, err)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}
