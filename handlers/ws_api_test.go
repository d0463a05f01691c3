package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/store"
)

type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

func (b *testBundle) dialWS(t *testing.T, token string, header http.Header) (*wsClient, *http.Response, error) {
	t.Helper()
	if header == nil {
		header = http.Header{}
	}
	if token != "" {
		header.Set("Authorization", "Bearer "+token)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+"/api/v1/ws", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		return nil, res, err
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { _ = c.CloseNow() })
	return &wsClient{t: t, c: c}, res, nil
}

func (w *wsClient) send(v string) {
	w.t.Helper()
	require.NoError(w.t, w.c.Write(w.t.Context(), websocket.MessageText, []byte(v)))
}

func (w *wsClient) next() map[string]any {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), 15*time.Second)
	defer cancel()
	_, b, err := w.c.Read(ctx)
	require.NoError(w.t, err)
	var m map[string]any
	require.NoError(w.t, json.Unmarshal(b, &m))
	return m
}

func TestWebSocketProtocol(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	id := r.body["id"].(string)
	for _, p := range []string{"high", "low"} {
		require.Equal(t, http.StatusOK, b.api(t, "PATCH", "/api/v1/tasks/"+id, b.aliceToken, fmt.Sprintf(`{"priority":%q}`, p), nil).status)
	}
	ws, _, err := b.dialWS(t, b.aliceToken, nil)
	require.NoError(t, err)

	t.Run("PingPong", func(t *testing.T) {
		ws.send(`{"type":"ping"}`)
		require.Equal(t, "pong", ws.next()["type"])
	})
	t.Run("MalformedAndUnknownKeepTheSocket", func(t *testing.T) {
		ws.send(`{"type":`)
		m := ws.next()
		require.Equal(t, "error", m["type"])
		require.Equal(t, "invalid", m["code"])
		ws.send(`{"type":"dance","id":"d1"}`)
		m = ws.next()
		require.Equal(t, "error", m["type"])
		require.Equal(t, "d1", m["id"])
		require.Equal(t, "invalid", m["code"])
		ws.send(`{"type":"cancel","task_id":5,"id":"w1"}`)
		m = ws.next()
		require.Equal(t, "w1", m["id"])
		require.Equal(t, "invalid", m["code"])
		require.NoError(t, ws.c.Write(t.Context(), websocket.MessageBinary, []byte{1, 2, 3}))
		require.Equal(t, "invalid", ws.next()["code"])
		ws.send(`{"type":"ping","id":"still-open"}`)
		require.Equal(t, "pong", ws.next()["type"])
	})
	t.Run("KeysDifferingInCaseAreRefusedAndDoNothing", func(t *testing.T) {
		ws.send(fmt.Sprintf(`{"type":"ping","Type":"cancel","task_id":%q,"id":"k1"}`, id))
		m := ws.next()
		require.Equal(t, "error", m["type"])
		require.Equal(t, "invalid", m["code"])
		require.Equal(t, "k1", m["id"])
		r := b.api(t, "GET", "/api/v1/tasks/"+id, b.aliceToken, "", nil)
		require.Equal(t, "pending", r.body["state"], "not cancelled")
	})
	t.Run("ReplayThenLiveWithoutGap", func(t *testing.T) {
		ws.send(fmt.Sprintf(`{"type":"subscribe","task_id":%q,"after_seq":1,"id":"s1"}`, id))
		m := ws.next()
		require.Equal(t, "ack", m["type"])
		require.Equal(t, "s1", m["id"])
		var seqs []float64
		for range 2 {
			m := ws.next()
			require.Equal(t, "event", m["type"])
			seqs = append(seqs, m["event"].(map[string]any)["seq"].(float64))
		}
		require.Equal(t, []float64{2, 3}, seqs)
		ws.send(fmt.Sprintf(`{"type":"cancel","task_id":%q,"id":"c1"}`, id))
		var got []string
		for len(got) < 3 {
			m := ws.next()
			switch m["type"] {
			case "ack":
				got = append(got, "ack:"+m["id"].(string))
			case "event":
				e := m["event"].(map[string]any)
				got = append(got, fmt.Sprintf("%v:%v", e["seq"], e["type"]))
			}
		}
		require.ElementsMatch(t, []string{"ack:c1", "4:task.state", "5:task.cancelled"}, got)
		ws.send(fmt.Sprintf(`{"type":"cancel","task_id":%q,"id":"c2"}`, id))
		m = ws.next()
		require.Equal(t, "error", m["type"])
		require.Equal(t, "conflict", m["code"])
	})
	t.Run("OtherTeamIsNotFound", func(t *testing.T) {
		bob, _, err := b.dialWS(t, b.bobToken, nil)
		require.NoError(t, err)
		bob.send(fmt.Sprintf(`{"type":"subscribe","task_id":%q,"id":"x"}`, id))
		m := bob.next()
		require.Equal(t, "error", m["type"])
		require.Equal(t, "not_found", m["code"])
		bob.send(fmt.Sprintf(`{"type":"cancel","task_id":%q,"id":"y"}`, id))
		require.Equal(t, "not_found", bob.next()["code"])
	})
	t.Run("TeamFeed", func(t *testing.T) {
		ws.send(`{"type":"subscribe","topic":"team","id":"t1"}`)
		require.Equal(t, "ack", ws.next()["type"])
		r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
		rival := b.api(t, "POST", "/api/v1/tasks", b.bobToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
		for {
			m := ws.next()
			if m["type"] != "task" {
				continue
			}
			got := m["task"].(map[string]any)["id"]
			require.NotEqual(t, rival.body["id"], got, "only the own team's tasks")
			if got == id {
				continue // the cancel above, whose wake-up may come late
			}
			require.Equal(t, r.body["id"], got)
			break
		}
	})
}

func TestWebSocketAuthAndOrigin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, res, err := b.dialWS(t, "", nil)
	require.Error(t, err)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	_, res, err = b.dialWS(t, b.aliceToken, http.Header{"Origin": {"https://evil.test"}})
	require.Error(t, err)
	require.Equal(t, http.StatusForbidden, res.StatusCode, "a foreign origin is refused, token or not")
	for _, path := range []string{"/api/v1/ws", "/tasks/ws", "/dashboard/ws", "/tasks/" + store.NewTaskID() + "/ws"} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+path,
			&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.test"}}})
		cancel()
		require.Error(t, err)
		require.Equal(t, http.StatusForbidden, res.StatusCode, "%s: a foreign origin without credentials is refused as foreign", path)
	}
	_, _, err = b.dialWS(t, b.aliceToken, http.Header{"Origin": {b.srv.URL}})
	require.NoError(t, err, "same origin is fine")
}

// A socket signed in by session cookie must send Origin (browsers always
// do), else its origin cannot be checked; a bearer token needs none.
// Before, the cookie without Origin was accepted.
func TestWebSocketCookieNeedsOrigin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	id := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)
	dial := func(path string, header http.Header) (*http.Response, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		conn, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+path, &websocket.DialOptions{HTTPClient: c, HTTPHeader: header})
		if err == nil {
			_ = conn.CloseNow()
		}
		return res, err
	}
	for _, path := range []string{"/api/v1/ws", "/tasks/ws", "/dashboard/ws", "/tasks/" + id + "/ws"} {
		res, err := dial(path, nil)
		require.Error(t, err, path)
		require.Equal(t, http.StatusForbidden, res.StatusCode, "%s: a session cookie without Origin", path)
		_, err = dial(path, http.Header{"Origin": {b.srv.URL}})
		require.NoError(t, err, "%s: the same cookie with its own origin", path)
	}
	_, _, err := b.dialWS(t, b.aliceToken, nil)
	require.NoError(t, err, "a bearer token without Origin (CLI, scripts)")
}

func TestWebSocketLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t.Run("OversizedMessageCloses1009", func(t *testing.T) {
		ws, _, err := b.dialWS(t, b.aliceToken, nil)
		require.NoError(t, err)
		_ = ws.c.Write(t.Context(), websocket.MessageText, []byte(`{"type":"ping","text":"`+strings.Repeat("x", 100<<10)+`"}`))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_, _, err = ws.c.Read(ctx)
		require.Equal(t, websocket.StatusMessageTooBig, websocket.CloseStatus(err))
	})
	t.Run("SlowReaderClosed1008", func(t *testing.T) {
		r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
		id := r.body["id"].(string)
		// A long history: 20k events of 1 KiB.
		b.addLogEvents(t, id, 20000, 1024)
		ws, _, err := b.dialWS(t, b.aliceToken, nil)
		require.NoError(t, err)
		slowBefore := b.metric(t, "flightdeck_websocket_slow_closed_total")
		ws.send(fmt.Sprintf(`{"type":"subscribe","task_id":%q}`, id))
		// Do not read until the server gave up on this socket (its
		// write timed out: the metric counts it); then find the close.
		require.Eventually(t, func() bool { return b.metric(t, "flightdeck_websocket_slow_closed_total") > slowBefore },
			2*time.Minute, 100*time.Millisecond, "the server never gave up on a client that stopped reading")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		// The server gave up on us: the stream ends before the history
		// does, with 1008 when the close frame still fit in the socket
		// buffers, or with the connection cut when it did not.
		read := 0
		for {
			_, _, err := ws.c.Read(ctx)
			if err != nil {
				status := websocket.CloseStatus(err)
				require.True(t, status == websocket.StatusPolicyViolation || status == -1, err)
				require.NoError(t, ctx.Err(), "closed, not timed out")
				break
			}
			read++
		}
		require.Less(t, read, 20000, "a slow reader does not get the whole stream")
	})
	t.Run("NonReaderCountedOnce", func(t *testing.T) {
		// A client that sends and never reads fills its send queue; every
		// answer after that finds the queue full too, until the socket is
		// gone. The metric counts sockets, not those answers.
		ws, _, err := b.dialWS(t, b.aliceToken, nil)
		require.NoError(t, err)
		before := b.metric(t, "flightdeck_websocket_slow_closed_total")
		ping := []byte(`{"type":"ping","id":"` + strings.Repeat("p", 32<<10) + `"}`)
		for i := 0; i < 5000; i++ {
			if ws.c.Write(t.Context(), websocket.MessageText, ping) != nil {
				break // the server closed the socket
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		for {
			if _, _, err := ws.c.Read(ctx); err != nil {
				require.NoError(t, ctx.Err(), "closed, not timed out")
				break
			}
		}
		require.Equal(t, before+1, b.metric(t, "flightdeck_websocket_slow_closed_total"))
	})
}

// addLogEvents appends n step.log events of size bytes to a task whose last
// event is seq 1 (a task just submitted).
func (b *testBundle) addLogEvents(t *testing.T, id string, n, size int) {
	t.Helper()
	_, err := b.pool.Exec(t.Context(), `
		WITH n AS (UPDATE tasks SET last_seq = $2 + 1 WHERE id = $1)
		INSERT INTO task_event_batches (task_id, first_seq, last_seq, events)
		SELECT $1, g, g, jsonb_build_array(jsonb_build_object('type', 'step.log', 'status', 'log', 'message', repeat('x', $3)))
		FROM generate_series(2, $2 + 1) g`, id, n, size)
	require.NoError(t, err)
}

// TestWebSocketReplayIsPacedByTheClient: a long history goes to a client
// that reads as fast as it can, however much larger than the send buffer;
// the replay waits on the socket instead of overflowing the buffer.
func TestWebSocketReplayIsPacedByTheClient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	id := r.body["id"].(string)
	const n = 2000
	b.addLogEvents(t, id, n, 200)
	ws, _, err := b.dialWS(t, b.aliceToken, nil)
	require.NoError(t, err)
	// The team feed shares the socket with the replay.
	ws.send(`{"type":"subscribe","topic":"team","id":"team"}`)
	ws.send(fmt.Sprintf(`{"type":"subscribe","task_id":%q,"after_seq":0,"id":"a"}`, id))
	last := 0
	for last < n+1 {
		m := ws.next()
		if m["type"] != "event" {
			continue
		}
		seq := int(m["event"].(map[string]any)["seq"].(float64))
		require.Equal(t, last+1, seq, "in order, none missing")
		last = seq
	}
	ws.send(`{"type":"ping","id":"p"}`)
	for {
		if m := ws.next(); m["type"] == "pong" {
			break
		}
	}
}

// teamFeedLoads reads the team feed's load counter from /metrics.
func (b *testBundle) teamFeedLoads(t *testing.T) float64 {
	t.Helper()
	return b.metric(t, "flightdeck_ws_team_feed_loads_total")
}

// metric reads an unlabelled metric from /metrics.
func (b *testBundle) metric(t *testing.T, name string) float64 {
	t.Helper()
	_, body := b.get(t, b.srv.Client(), "/metrics", nil)
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}

// nextTask reads frames until a task message and returns its task.
func (w *wsClient) nextTask() map[string]any {
	w.t.Helper()
	for {
		if m := w.next(); m["type"] == "task" {
			return m["task"].(map[string]any)
		}
	}
}

func TestWebSocketTeamFeedFansOutOneLoad(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 25
	subscribe := func(token string) *wsClient {
		ws, _, err := b.dialWS(t, token, nil)
		require.NoError(t, err)
		ws.send(`{"type":"subscribe","topic":"team","id":"t"}`)
		m := ws.next()
		require.Equal(t, "ack", m["type"])
		require.Equal(t, "t", m["id"])
		return ws
	}
	acme := make([]*wsClient, n)
	for i := range acme {
		acme[i] = subscribe(b.aliceToken)
	}
	rival := subscribe(b.bobToken)
	require.Zero(t, b.teamFeedLoads(t))

	// Each change reaches every acme socket and costs one load in all.
	id := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)
	for _, ws := range acme {
		tk := ws.nextTask()
		require.Equal(t, id, tk["id"])
		require.Equal(t, "pending", tk["state"])
		require.NotContains(t, tk, "steps", "the team feed sends tasks without steps")
	}
	require.Equal(t, 1.0, b.teamFeedLoads(t))
	require.Equal(t, http.StatusAccepted, b.api(t, "POST", "/api/v1/tasks/"+id+"/cancel", b.aliceToken, ``, nil).status)
	for _, ws := range acme {
		require.Equal(t, "cancelled", ws.nextTask()["state"])
	}
	require.Equal(t, 2.0, b.teamFeedLoads(t))

	// The rival socket got none of acme's: its first task is its own.
	own := b.api(t, "POST", "/api/v1/tasks", b.bobToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)
	require.Equal(t, own, rival.nextTask()["id"])
	// And no acme socket got rival's: their next task is acme's next one.
	next := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)
	for _, ws := range acme {
		require.Equal(t, next, ws.nextTask()["id"])
	}
	require.Equal(t, 4.0, b.teamFeedLoads(t))

	// Unsubscribing stops the frames; the others go on.
	acme[0].send(`{"type":"unsubscribe","topic":"team","id":"u"}`)
	require.Equal(t, "ack", acme[0].next()["type"])
	last := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)
	require.Equal(t, last, acme[1].nextTask()["id"])
	acme[0].send(`{"type":"ping","id":"p"}`)
	require.Equal(t, "pong", acme[0].next()["type"], "no task frame after the unsubscribe ack")
}

// TestWebSocketEndsWithItsCredentials: a socket acts with the rights its
// credentials have now; once its token is revoked or its session ended it
// is closed (1008), and nothing it sends after that takes effect.
func TestWebSocketEndsWithItsCredentials(t *testing.T) {
	t.Parallel()
	newToken := func(b *testBundle, name string) string {
		secret, h := auth.NewSecret(auth.TokenPrefix)
		require.NoError(t, b.store.TokenCreate(t.Context(), "alice@acme.test", name, h))
		return secret
	}
	closedWith := func(t *testing.T, ws *wsClient) websocket.StatusCode {
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		defer cancel()
		for {
			if _, _, err := ws.c.Read(ctx); err != nil {
				require.NoError(t, ctx.Err(), "closed, not timed out")
				return websocket.CloseStatus(err)
			}
		}
	}

	t.Run("MessageAfterRevocationDoesNothing", func(t *testing.T) {
		t.Parallel()
		// No periodic check in this test's time: the message itself finds out.
		b := setupWith(t, func(c *configT) { c.WSAuthCheck = time.Hour })
		token := newToken(b, "ws")
		id := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)
		ws, _, err := b.dialWS(t, token, nil)
		require.NoError(t, err)
		ws.send(fmt.Sprintf(`{"type":"set_priority","task_id":%q,"priority":"high","id":"p1"}`, id))
		require.Equal(t, "ack", ws.next()["type"])
		_, err = b.store.TokenRevoke(t.Context(), "alice@acme.test", "ws")
		require.NoError(t, err)
		ws.send(fmt.Sprintf(`{"type":"set_priority","task_id":%q,"priority":"hotfix","id":"p2"}`, id))
		require.Equal(t, websocket.StatusPolicyViolation, closedWith(t, ws))
		r := b.api(t, "GET", "/api/v1/tasks/"+id, b.aliceToken, "", nil)
		require.Equal(t, "high", r.body["priority"], "the message after the revocation did nothing")
	})
	t.Run("RevokedTokenClosesAnIdleSocket", func(t *testing.T) {
		t.Parallel()
		b := setupWith(t, func(c *configT) { c.WSAuthCheck = 50 * time.Millisecond })
		token := newToken(b, "idle")
		ws, _, err := b.dialWS(t, token, nil)
		require.NoError(t, err)
		other, _, err := b.dialWS(t, b.aliceToken, nil)
		require.NoError(t, err)
		ws.send(`{"type":"subscribe","topic":"team","id":"t"}`)
		require.Equal(t, "ack", ws.next()["type"])
		_, err = b.store.TokenRevoke(t.Context(), "alice@acme.test", "idle")
		require.NoError(t, err)
		require.Equal(t, websocket.StatusPolicyViolation, closedWith(t, ws))
		other.send(`{"type":"ping"}`)
		require.Equal(t, "pong", other.next()["type"], "a socket with a live token stays open")
	})
	t.Run("LogoutClosesTheSessionsSockets", func(t *testing.T) {
		t.Parallel()
		b := setupWith(t, func(c *configT) { c.WSAuthCheck = 50 * time.Millisecond })
		c := b.browser(t)
		b.login(t, c, "alice@acme.test", testPassword)
		id := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil).body["id"].(string)
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		defer cancel()
		dial := func(path string) *wsClient {
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+path,
				&websocket.DialOptions{HTTPClient: c, HTTPHeader: http.Header{"Origin": {b.srv.URL}}})
			require.NoError(t, err)
			conn.SetReadLimit(4 << 20)
			t.Cleanup(func() { _ = conn.CloseNow() })
			return &wsClient{t: t, c: conn}
		}
		api, page, list := dial("/api/v1/ws"), dial("/tasks/"+id+"/ws"), dial("/tasks/ws")
		api.send(`{"type":"ping"}`)
		require.Equal(t, "pong", api.next()["type"])
		tok := b.csrfFrom(t, c, "/tasks")
		require.Equal(t, http.StatusSeeOther, b.postForm(t, c, "/logout", url.Values{"_csrf": {tok}}, nil))
		for _, ws := range []*wsClient{api, page, list} {
			require.Equal(t, websocket.StatusPolicyViolation, closedWith(t, ws))
		}
	})
}
