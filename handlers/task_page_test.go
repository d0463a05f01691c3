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
	// The schema's constraints are the inputs' attributes.
	app := doc.Find(`[data-testid="field-app"]`)
	require.Equal(t, "31", app.AttrOr("maxlength", ""))
	require.Equal(t, `[a-z](?:[\u{2d}0-9a-z]){0,30}`, app.AttrOr("pattern", ""))
	require.True(t, app.Is("[required]"))
	require.Equal(t, "40", doc.Find(`[data-testid="field-version"]`).AttrOr("maxlength", ""))
	require.Equal(t, "1", doc.Find(`[data-testid="field-replicas"]`).AttrOr("min", ""))
	require.Equal(t, "5", doc.Find(`[data-testid="field-replicas"]`).AttrOr("max", ""))
	require.Equal(t, "lowercase letters, digits and dashes, starting with a letter, up to 31 characters", doc.Find(`[data-testid="hint-app"]`).Text())
	require.Equal(t, "hint-app", app.AttrOr("aria-describedby", ""))
	require.Contains(t, doc.Find(`[data-testid="form-approvals"]`).Text(), "deploy_container waits for approver or admin")
	require.Contains(t, doc.Find(`[data-testid="form-approvals"]`).Text(), "when env is production")

	// Every error at once, each at its field, the first one focused.
	res, doc = post(url.Values{"pipeline": {"web-service"}, "app": {"Bad App!"}, "version": {strings.Repeat("1", 5000)},
		"env": {"staging"}, "replicas": {"9"}})
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Equal(t, "app must be lowercase letters, digits and dashes, starting with a letter, up to 31 characters",
		doc.Find(`[data-testid="error-app"]`).Text())
	require.Equal(t, "version must be at most 40 characters (this one has 5000)", doc.Find(`[data-testid="error-version"]`).Text())
	require.Equal(t, "replicas must be at most 5", doc.Find(`[data-testid="error-replicas"]`).Text())
	require.Contains(t, doc.Find(`[data-testid="form-error"]`).Text(), "3 values need fixing")
	require.Equal(t, 3, doc.Find(`[aria-invalid="true"]`).Length())
	require.Equal(t, "err-app", doc.Find(`[data-testid="field-app"]`).AttrOr("aria-describedby", ""), "the error repeats the hint")
	require.Equal(t, "err-replicas hint-replicas", doc.Find(`[data-testid="field-replicas"]`).AttrOr("aria-describedby", ""))
	require.Equal(t, 1, doc.Find(`[autofocus]`).Length())
	require.Equal(t, "app", doc.Find(`[autofocus]`).AttrOr("name", ""), "the first invalid field has the focus")
	require.NotContains(t, doc.Find(`[data-testid="task-form"]`).Text(), "^[a-z]", "no raw pattern in the form")
	require.Equal(t, "Bad App!", doc.Find(`[data-testid="field-app"]`).AttrOr("value", ""), "the value is kept")
	res, doc = post(url.Values{"pipeline": {"web-service"}, "app": {"shop"}, "replicas": {"many"}})
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Equal(t, "version is required", doc.Find(`[data-testid="error-version"]`).Text())
	require.Equal(t, "replicas must be a whole number", doc.Find(`[data-testid="error-replicas"]`).Text())
	require.Equal(t, "version", doc.Find(`[autofocus]`).AttrOr("name", ""))
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
	cancelBtn := doc.Find(`[data-testid="cancel-open"]`)
	require.Equal(t, 1, cancelBtn.Length())
	require.Equal(t, "Cancel this deploy?", cancelBtn.AttrOr("data-confirm", ""), "cancel asks first")
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
