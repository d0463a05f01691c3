package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flightdeck/internal/notify"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
	"flightdeck/workflow/webhook"
)

type testBundle struct {
	st    *store.Store
	admin *auth.User
	hub   *notify.Hub
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	st := store.New(dbtest.DB(t))
	b := &testBundle{st: st, admin: testfactory.User(t, st, "admin@acme.test", "acme", auth.RoleAdmin), hub: notify.NewHub()}
	n := notify.NewListener(st, nil)
	b.hub.Attach(n)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = n.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return b
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// runService runs the dispatcher and sender with a millisecond schedule,
// allowed to reach the local receivers.
func (b *testBundle) runService(t *testing.T, timeout time.Duration) {
	t.Helper()
	g, err := webhook.NewGuard([]string{"127.0.0.1"}, nil)
	require.NoError(t, err)
	svc := webhook.New(b.st, b.hub, webhook.Config{
		Guard: g, Timeout: timeout, Poll: 20 * time.Millisecond, Logger: testLogger(t),
		Schedule: webhook.Schedule{Steps: []time.Duration{5 * time.Millisecond, 10 * time.Millisecond}, Every: 20 * time.Millisecond, MaxAge: time.Minute},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = svc.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// runPool runs workers that complete every task at once.
func (b *testBundle) runPool(t *testing.T) {
	t.Helper()
	h := queue.HandlerFunc(func(context.Context, *queue.Job) queue.Outcome { return queue.Outcome{State: task.StateCompleted} })
	n := notify.NewListener(b.st, nil)
	p := queue.New(b.st, map[task.Kind]queue.Handler{task.KindDeploy: h}, queue.Config{
		Workers: 4, Lease: 5 * time.Second, PollInterval: 20 * time.Millisecond, Grace: time.Second, Logger: testLogger(t),
	})
	p.Attach(n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(ctx) })
	wg.Go(func() { _ = p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func (b *testBundle) subscribe(t *testing.T, url string, events ...string) *store.Webhook {
	t.Helper()
	w, err := b.st.WebhookCreate(t.Context(), store.WebhookCreateParams{
		TeamID: b.admin.Memberships[0].TeamID, URL: url, Events: events, Secret: webhook.NewSecret(), CreatedByID: b.admin.ID,
	})
	require.NoError(t, err)
	return w
}

func (b *testBundle) submit(t *testing.T, hook map[string]string) *task.Task {
	t.Helper()
	p := store.TaskInsertParams{TeamID: b.admin.Memberships[0].TeamID, CreatedByID: b.admin.ID, Kind: task.KindDeploy,
		Pipeline: "noop", Priority: task.PriorityNormal, MaxAttempts: 5}
	if hook != nil {
		p.Webhook, _ = json.Marshal(hook)
	}
	tk, _, err := b.st.TaskInsert(t.Context(), p)
	require.NoError(t, err)
	return tk
}

// delivery is one request a receiver got.
type delivery struct {
	id, ts string
	body   map[string]any
	sigOK  bool
}

// receiver is a webhook endpoint that verifies signatures on its own (not
// with the package's Sign) and deduplicates by webhook-id.
type receiver struct {
	srv       *httptest.Server
	key       []byte
	mu        sync.Mutex
	status    func(n int) int // answer of the n-th request (1-based)
	requests  []delivery
	processed map[string]int // 2xx answers per webhook-id
	got       chan delivery
}

func newReceiver(t *testing.T, secret string, status func(n int) int) *receiver {
	t.Helper()
	key := []byte(secret)
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		var err error
		key, err = base64.StdEncoding.DecodeString(rest)
		require.NoError(t, err)
	}
	r := &receiver{key: key, status: status, processed: map[string]int{}, got: make(chan delivery, 1000)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	d := delivery{id: req.Header.Get("webhook-id"), ts: req.Header.Get("webhook-timestamp")}
	_ = json.Unmarshal(raw, &d.body)
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(d.id + "." + d.ts + "." + string(raw)))
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	for _, s := range strings.Fields(req.Header.Get("webhook-signature")) {
		d.sigOK = d.sigOK || hmac.Equal([]byte(s), []byte(want))
	}
	if ts, err := strconv.ParseInt(d.ts, 10, 64); err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		d.sigOK = false
	}
	r.mu.Lock()
	r.requests = append(r.requests, d)
	code := r.status(len(r.requests))
	if code >= 200 && code < 300 && d.sigOK {
		r.processed[d.id]++
	}
	r.mu.Unlock()
	if code == 0 { // "down": drop the connection without an answer
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
	} else {
		w.WriteHeader(code)
	}
	r.got <- d
}

func (r *receiver) snapshot() ([]delivery, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := map[string]int{}
	for k, v := range r.processed {
		p[k] = v
	}
	return append([]delivery(nil), r.requests...), p
}

func TestDeliveryDownThenUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	upFlag := make(chan struct{})
	// Down (dropped connections and 503s) until upFlag closes, then 200.
	status := func(n int) int {
		select {
		case <-upFlag:
			return 200
		default:
		}
		if n%2 == 0 {
			return 0
		}
		return 503
	}
	secret := webhook.NewSecret()
	recv := newReceiver(t, secret, status)
	w, err := b.st.WebhookCreate(t.Context(), store.WebhookCreateParams{TeamID: b.admin.Memberships[0].TeamID,
		URL: recv.srv.URL + "/hook", Events: []string{"task.completed"}, Secret: secret})
	require.NoError(t, err)

	b.runService(t, 2*time.Second)
	b.runPool(t)
	const n = 6
	want := map[string]bool{}
	for range n {
		want[b.submit(t, nil).ID] = true
	}
	// Let the endpoint fail a good number of attempts first.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for i := 0; i < 2*n; i++ {
		select {
		case <-recv.got:
		case <-ctx.Done():
			t.Fatal("the receiver got too few attempts while down")
		}
	}
	close(upFlag)
	require.Eventually(t, func() bool {
		_, p := recv.snapshot()
		return len(p) == n
	}, 30*time.Second, 10*time.Millisecond, "every event delivered once up")
	// The database agrees: all succeeded.
	require.Eventually(t, func() bool {
		ds, err := b.st.WebhookDeliveryList(t.Context(), b.admin.TeamIDs(), w.ID, 100)
		require.NoError(t, err)
		ok := len(ds) == n
		for _, d := range ds {
			ok = ok && d.State == "succeeded"
		}
		return ok
	}, 10*time.Second, 10*time.Millisecond)

	reqs, processed := recv.snapshot()
	gotTasks := map[string]int{}
	retried := 0
	attempts := map[string]int{}
	for _, d := range reqs {
		require.True(t, d.sigOK, "signature verifies with the subscription secret")
		attempts[d.id]++
		require.Equal(t, "task.completed", d.body["type"])
		tk := d.body["task"].(map[string]any)
		require.Equal(t, "completed", tk["state"])
		if processed[d.id] > 0 {
			gotTasks[tk["id"].(string)] = 0
		}
	}
	for id, c := range processed {
		require.Equal(t, 1, c, "webhook-id %s processed exactly once", id)
		if attempts[id] > 1 {
			retried++
		}
	}
	require.Len(t, gotTasks, n)
	for id := range want {
		_, ok := gotTasks[id]
		require.True(t, ok, "task %s delivered", id)
	}
	require.Positive(t, retried, "retries reuse the webhook-id")
}

func TestGoneDisablesSubscription(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gone := newReceiver(t, "", func(int) int { return http.StatusGone })
	ok := newReceiver(t, "", func(int) int { return 200 })
	wGone := b.subscribe(t, gone.srv.URL, "task.completed")
	wOK := b.subscribe(t, ok.srv.URL, "task.completed")
	b.runService(t, 2*time.Second)
	b.runPool(t)

	t1 := b.submit(t, nil)
	require.Eventually(t, func() bool {
		w, err := b.st.WebhookGet(t.Context(), b.admin.TeamIDs(), wGone.ID)
		require.NoError(t, err)
		return w.DisabledAt != nil
	}, 20*time.Second, 10*time.Millisecond, "410 disables the subscription")

	t2 := b.submit(t, nil)
	// The healthy subscription receiving t2 proves its event was dispatched.
	require.Eventually(t, func() bool {
		reqs, _ := ok.snapshot()
		for _, d := range reqs {
			if d.body["task"].(map[string]any)["id"] == t2.ID {
				return true
			}
		}
		return false
	}, 20*time.Second, 10*time.Millisecond)
	reqs, _ := gone.snapshot()
	require.Len(t, reqs, 1, "the disabled endpoint got only the first event, once")
	require.Equal(t, t1.ID, reqs[0].body["task"].(map[string]any)["id"])
	ds, err := b.st.WebhookDeliveryList(t.Context(), b.admin.TeamIDs(), wGone.ID, 100)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, "failed", ds[0].State)
	require.Equal(t, 410, *ds[0].LastStatus)

	// Redelivery enables it again and sends the same webhook-id.
	require.NoError(t, b.st.WebhookDeliveryRedeliver(t.Context(), b.admin.TeamIDs(), wGone.ID, ds[0].ID))
	w, err := b.st.WebhookGet(t.Context(), b.admin.TeamIDs(), wGone.ID)
	require.NoError(t, err)
	require.Nil(t, w.DisabledAt)
	select {
	case d := <-drainTo(gone.got, 2):
		require.Equal(t, ds[0].ID, d.id)
	case <-time.After(20 * time.Second):
		t.Fatal("redelivery never arrived")
	}
	require.NotEmpty(t, wOK.ID)
}

// drainTo returns a channel yielding the n-th delivery of c.
func drainTo(c chan delivery, n int) <-chan delivery {
	out := make(chan delivery, 1)
	go func() {
		var d delivery
		for range n {
			d = <-c
		}
		out <- d
	}()
	return out
}

func TestTaskWebhookFiresOnCompletion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const secret = "task-secret-0123456789"
	recv := newReceiver(t, secret, func(int) int { return 204 })
	b.runService(t, 2*time.Second)
	b.runPool(t)
	tk := b.submit(t, map[string]string{"url": recv.srv.URL + "/done", "secret": secret})
	var d delivery
	select {
	case d = <-recv.got:
	case <-time.After(20 * time.Second):
		t.Fatal("no delivery")
	}
	require.True(t, d.sigOK, "signed with the task's secret bytes")
	require.Equal(t, "task.completed", d.body["type"])
	body := d.body["task"].(map[string]any)
	require.Equal(t, tk.ID, body["id"])
	require.Equal(t, "completed", body["state"])
	require.NotContains(t, string(mustJSON(d.body)), secret, "the secret is never in the payload")
	// Only the terminal event goes to a task's webhook.
	require.Eventually(t, func() bool {
		var state string
		err := b.st.Pool().QueryRow(t.Context(), `SELECT state FROM webhook_deliveries WHERE task_id = $1`, tk.ID).Scan(&state)
		return err == nil && state == "succeeded"
	}, 10*time.Second, 10*time.Millisecond)
	var count int
	require.NoError(t, b.st.Pool().QueryRow(t.Context(), `SELECT count(*) FROM webhook_deliveries WHERE task_id = $1`, tk.ID).Scan(&count))
	require.Equal(t, 1, count)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func TestCompletionNotDelayedByHangingReceiver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	release := make(chan struct{})
	entered := make(chan string, 10)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- r.Header.Get("webhook-id")
		<-release
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) }) // runs before hang.Close
	b.runService(t, time.Minute)
	b.runPool(t)
	hook := map[string]string{"url": hang.URL, "secret": "hanging-secret-0123"}
	t1 := b.submit(t, hook)
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the delivery never started")
	}
	got, err := b.st.TaskGet(t.Context(), b.admin.TeamIDs(), t1.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateCompleted, got.State)
	// With the first delivery still hanging, further tasks run and finish.
	t2 := b.submit(t, hook)
	require.Eventually(t, func() bool {
		got, err := b.st.TaskGet(t.Context(), b.admin.TeamIDs(), t2.ID)
		return err == nil && got.State == task.StateCompleted
	}, 20*time.Second, 10*time.Millisecond)
	select {
	case <-release:
		t.Fatal("released early")
	default:
	}
}

func TestTimeoutRetriedWithSameID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	release := make(chan struct{})
	ids := make(chan string, 10)
	var n atomicCounter
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // lets the server notice the client hanging up
		ids <- r.Header.Get("webhook-id")
		if n.inc() == 1 {
			select { // the first attempt outlasts the sender's timeout
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(200)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	b.runService(t, 300*time.Millisecond)
	b.runPool(t)
	tk := b.submit(t, map[string]string{"url": srv.URL, "secret": "timeout-secret-0123"})
	var got []string
	for len(got) < 2 {
		select {
		case id := <-ids:
			got = append(got, id)
		case <-time.After(20 * time.Second):
			t.Fatalf("got %d attempts", len(got))
		}
	}
	require.Equal(t, got[0], got[1], "a retry keeps the webhook-id")
	require.Eventually(t, func() bool {
		var state, lastErr string
		var attempts int
		err := b.st.Pool().QueryRow(t.Context(), `SELECT state, attempts, COALESCE(last_error, '') FROM webhook_deliveries WHERE task_id = $1`, tk.ID).Scan(&state, &attempts, &lastErr)
		return err == nil && state == "succeeded" && attempts == 2
	}, 10*time.Second, 10*time.Millisecond)
}

type atomicCounter struct {
	mu sync.Mutex
	n  int
}

func (c *atomicCounter) inc() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

// TestSeveralProcesses: two services on one database (as two serve
// processes) enqueue and send every event once.
func TestSeveralProcesses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	secret := webhook.NewSecret()
	recv := newReceiver(t, secret, func(int) int { return 200 })
	_, err := b.st.WebhookCreate(t.Context(), store.WebhookCreateParams{TeamID: b.admin.Memberships[0].TeamID,
		URL: recv.srv.URL, Events: []string{"task.completed", "task.state"}, Secret: secret})
	require.NoError(t, err)
	b.runService(t, 2*time.Second)
	b.runService(t, 2*time.Second)
	b.runPool(t)
	const n = 8
	for range n {
		b.submit(t, nil)
	}
	require.Eventually(t, func() bool {
		var pending, all int
		require.NoError(t, b.st.Pool().QueryRow(t.Context(),
			`SELECT count(*) FILTER (WHERE state <> 'succeeded'), count(*) FROM webhook_deliveries`).Scan(&pending, &all))
		var events int
		require.NoError(t, b.st.Pool().QueryRow(t.Context(),
			`SELECT count(*) FROM task_events WHERE type IN ('task.completed', 'task.state')`).Scan(&events))
		_, p := recv.snapshot()
		return pending == 0 && all == events && len(p) == events && b.allDone(t, n)
	}, 30*time.Second, 20*time.Millisecond)
	reqs, processed := recv.snapshot()
	require.Len(t, reqs, len(processed), "no delivery sent twice")
	for id, c := range processed {
		require.Equal(t, 1, c, id)
	}
}

func (b *testBundle) allDone(t *testing.T, n int) bool {
	var done int
	require.NoError(t, b.st.Pool().QueryRow(t.Context(), `SELECT count(*) FROM tasks WHERE state = 'completed'`).Scan(&done))
	return done == n
}
