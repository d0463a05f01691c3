package handlers_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"flightdeck/workflow/task"
)

// TestTaskPageSocketReaderEndsWithTheHandler: echo reuses a request's
// context once its handler returns, so the task page socket's reader (which
// acts on the page's buttons with that context) must have ended by then.
// The socket's request ends (as at shutdown) while its reader is still
// busy with queued actions; when the handler returns, no goroutine of it
// may be left. Run with -race, the same reuse is also a data race.
func TestTaskPageSocketReaderEndsWithTheHandler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	id := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for i := range 10 {
		// A server of its own over the same handler, whose requests end
		// when it shuts down, and which looks for leftovers of the socket
		// handler the moment it returns. Its requests carry a profiler
		// label, which every goroutine they start inherits, so the sockets
		// of tests running alongside are not taken for leftovers.
		leftover := make(chan string, 1)
		base, shutdown := context.WithCancel(context.Background())
		label := t.Name() + "/" + strconv.Itoa(i)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			pprof.Do(r.Context(), pprof.Labels("request", label), func(ctx context.Context) {
				b.srv.Config.Handler.ServeHTTP(w, r.WithContext(ctx))
			})
			if strings.HasSuffix(r.URL.Path, "/ws") {
				leftover <- socketGoroutines(label)
			}
		}))
		srv.Config.BaseContext = func(net.Listener) context.Context { return base }
		srv.Start()
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/tasks/"+id+"/ws",
			&websocket.DialOptions{HTTPClient: c, HTTPHeader: http.Header{"Origin": {srv.URL}}})
		require.NoError(t, err)
		ws.SetReadLimit(4 << 20)
		_, _, err = ws.Read(ctx)
		require.NoError(t, err)
		for i := range 20 {
			p := []string{"high", "low", "hotfix", "normal"}[i%4]
			require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(`{"type":"set_priority","priority":"`+p+`","HEADERS":{}}`)))
		}
		// Once the first action is answered the reader is busy with the
		// rest: end the request now.
		for {
			_, frame, err := ws.Read(ctx)
			require.NoError(t, err)
			if strings.Contains(string(frame), `id="flash"`) {
				break
			}
		}
		require.NotEmpty(t, socketGoroutines(label), "the open socket's goroutines carry its request's label")
		shutdown()
		// Like a browser, answer the server's close frame (1012).
		go func() {
			for {
				if _, _, err := ws.Read(ctx); err != nil {
					return
				}
			}
		}()
		select {
		case g := <-leftover:
			require.Empty(t, g, "the socket handler returned with its reader still running")
		case <-ctx.Done():
			t.Fatal("the socket handler did not return")
		}
		_ = ws.CloseNow()
		srv.Close()
	}
}

// socketGoroutines returns the stacks of goroutines running the task page
// socket's code for requests labelled label (but the one that sends the
// close frame, which holds nothing of the request).
func socketGoroutines(label string) string {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	want := []byte(`"request":"` + label + `"`)
	var out []string
	for _, g := range bytes.Split(buf.Bytes(), []byte("\n\n")) {
		ours := bytes.Contains(g, []byte("handlers.(*Handler).wsTaskHTML")) || bytes.Contains(g, []byte("handlers.(*Handler).htmlAction"))
		if ours && bytes.Contains(g, want) && !bytes.Contains(g, []byte("(*wsConn).close")) {
			out = append(out, string(g))
		}
	}
	return strings.Join(out, "\n\n")
}

// TestTaskPageSocketResumes: the run page's socket resumes from the seq the
// page shows (after_seq): its first frames carry only the events after it,
// and it reads only those from the database, not the task's history again;
// a reconnect that says a later seq resumes there, gap-free.
func TestTaskPageSocketResumes(t *testing.T) {
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	id := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)
	claimed, err := b.store.TaskClaim(t.Context(), "w1", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	logs := func(lines ...string) {
		evs := []task.Event{{Type: task.EventStepStarted, Status: task.StatusToolCall, Step: 1, TotalStep: 1, StepName: "noop"}}
		for _, l := range lines {
			evs = append(evs, task.Event{Type: task.EventStepLog, Status: task.StatusLog, Step: 1, TotalStep: 1, StepName: "noop", Message: l})
		}
		require.NoError(t, b.store.EventAppend(t.Context(), id, claimed[0].Task.LeaseToken, evs))
	}
	logs("early one", "early two")

	res, body := b.get(t, c, "/tasks/"+id, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	require.Contains(t, doc.Find("#step-1-log").Text(), "early two")
	seq, err := strconv.Atoi(doc.Find("#run-seq").AttrOr("data-seq", ""))
	require.NoError(t, err)
	sigs := "&steps=" + url.QueryEscape(doc.Find("#task-steps").AttrOr("data-sig", "")) +
		"&undo=" + url.QueryEscape(doc.Find("#task-compensation").AttrOr("data-sig", ""))

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	// The sockets go through a server of their own that says when a
	// socket's handler has returned: a dropped socket's handler lives on
	// until it notices, and one that heard of the next events before then
	// reads them too (and keeps its model in place of the one the page
	// resumes from), which the count below would take for the new socket's.
	ended := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.srv.Config.Handler.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/ws") {
			ended <- struct{}{}
		}
	}))
	defer srv.Close()
	const read = "flightdeck_run_page_events_read_total"
	// connect reads frames until the page is told it is at seq want, and
	// returns them once the socket's handler has ended; the socket must
	// have read only the events after from.
	connect := func(from, want int) string {
		before := b.metric(t, read)
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/tasks/"+id+"/ws?after_seq="+strconv.Itoa(from)+sigs,
			&websocket.DialOptions{HTTPClient: c, HTTPHeader: http.Header{"Origin": {srv.URL}}})
		require.NoError(t, err)
		ws.SetReadLimit(4 << 20)
		var frames strings.Builder
		for !strings.Contains(frames.String(), `data-seq="`+strconv.Itoa(want)+`"`) {
			_, f, err := ws.Read(ctx)
			require.NoError(t, err)
			frames.Write(f)
		}
		require.Equal(t, float64(want-from), b.metric(t, read)-before, "read only the events after %d", from)
		_ = ws.CloseNow()
		select {
		case <-ended:
		case <-ctx.Done():
			t.Fatal("the socket's handler did not return after the socket dropped")
		}
		return frames.String()
	}

	logs("late one") // after the page loaded: seq+1 and seq+2
	f := connect(seq, seq+2)
	require.Contains(t, f, "late one")
	require.NotContains(t, f, "early", "the page has those")
	require.NotContains(t, f, `id="task-steps"`, "the list is not replaced")

	// The socket drops; more happens; the page reconnects from what it got.
	logs("later one", "later two")
	f = connect(seq+2, seq+5)
	require.Contains(t, f, "later one")
	require.Contains(t, f, "later two")
	require.NotContains(t, f, "late one", "not repeated")
	require.NotContains(t, f, "early")
}
