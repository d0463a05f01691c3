package handlers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/store"
)

type apiResp struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (b *testBundle) api(t *testing.T, method, path, token, body string, header map[string]string) apiResp {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, b.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := apiResp{status: res.StatusCode, header: res.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

func errCode(r apiResp) (code, field string) {
	e, _ := r.body["error"].(map[string]any)
	code, _ = e["code"].(string)
	field, _ = e["field"].(string)
	return code, field
}

func TestSubmitTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const good = `{"kind":"deploy","pipeline":"web-service","params":{"app":"shop","version":"1.2.3"},"priority":"hotfix","deadline_seconds":600}`

	t.Run("Accepted", func(t *testing.T) {
		r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, good, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		require.Equal(t, "pending", r.body["state"])
		require.Equal(t, "hotfix", r.body["priority"])
		require.Equal(t, "acme", r.body["team"])
		require.Equal(t, "alice@acme.test", r.body["created_by"])
		params := r.body["params"].(map[string]any)
		require.Equal(t, "staging", params["env"], "defaults applied")
		require.NotNil(t, r.body["deadline_at"])
		require.Len(t, r.body["steps"], 4, "the planned steps, as GET shows them")

		got := b.api(t, "GET", "/api/v1/tasks/"+r.body["id"].(string), b.aliceToken, "", nil)
		require.Equal(t, http.StatusOK, got.status)
		other := b.api(t, "GET", "/api/v1/tasks/"+r.body["id"].(string), b.bobToken, "", nil)
		require.Equal(t, http.StatusNotFound, other.status, "another team's task does not exist")
		code, _ := errCode(other)
		require.Equal(t, "not_found", code)
	})

	t.Run("BadInputWritesNothing", func(t *testing.T) {
		before := countTasks(t, b)
		tests := []struct {
			name, body, contentType string
			status                  int
			code, field             string
		}{
			{"Malformed", `{"kind":`, "", 400, "invalid", ""},
			{"TrailingGarbage", good + `garbage`, "", 400, "invalid", ""},
			{"DuplicateKeys", `{"kind":"deploy","kind":"agent","pipeline":"noop"}`, "", 400, "invalid", "kind"},
			{"KeysDifferingInCase", `{"kind":"deploy","pipeline":"web-service","PIPELINE":"noop","params":{"app":"shop","version":"1"}}`, "", 400, "invalid", "PIPELINE"},
			{"UnknownField", `{"kind":"deploy","pipeline":"noop","colour":1}`, "", 422, "invalid", "colour"},
			{"UnknownNestedField", `{"kind":"deploy","pipeline":"noop","webhook":{"url":"https://hooks.test/x","x":1}}`, "", 422, "invalid", "webhook.x"},
			{"UnknownBudget", `{"kind":"agent","prompt":"p","budgets":{"stepz":3}}`, "", 422, "invalid", "budgets.stepz"},
			{"WrongType", `{"kind":"deploy","pipeline":"noop","priority":3}`, "", 422, "invalid", "priority"},
			{"WrongContentType", good, "text/plain", 415, "unsupported_media_type", ""},
			{"Empty", ``, "application/json", 400, "invalid", ""},
			{"UnknownPipeline", `{"kind":"deploy","pipeline":"nope"}`, "", 422, "invalid", "pipeline"},
			{"BadParam", `{"kind":"deploy","pipeline":"web-service","params":{"app":"Shop; rm -rf /","version":"1"}}`, "", 422, "invalid", "params.app"},
			{"MissingParam", `{"kind":"deploy","pipeline":"web-service","params":{"app":"shop"}}`, "", 422, "invalid", "params.version"},
			{"BadPriority", `{"kind":"deploy","pipeline":"noop","priority":"urgent"}`, "", 422, "invalid", "priority"},
			{"BadDeadline", `{"kind":"deploy","pipeline":"noop","deadline_seconds":-1}`, "", 422, "invalid", "deadline_seconds"},
			{"MissingKind", `{"pipeline":"noop"}`, "", 422, "invalid", "kind"},
			{"AgentNotConfigured", `{"kind":"agent","prompt":"why is shop slow?"}`, "", 422, "invalid", "kind"},
			{"ShortWebhookSecret", `{"kind":"deploy","pipeline":"noop","webhook":{"url":"https://hooks.test/x","secret":"short"}}`, "", 422, "invalid", "webhook.secret"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				hdr := map[string]string{}
				if tt.contentType != "" {
					hdr["Content-Type"] = tt.contentType
				}
				r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, tt.body, hdr)
				require.Equal(t, tt.status, r.status, r.raw)
				code, field := errCode(r)
				require.Equal(t, tt.code, code, r.raw)
				require.Equal(t, tt.field, field, r.raw)
			})
		}
		require.Equal(t, before, countTasks(t, b), "no row written")
	})

	t.Run("EveryParamErrorListed", func(t *testing.T) {
		r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"web-service","params":{"app":"Shop!","replicas":0}}`, nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
		code, field := errCode(r)
		require.Equal(t, "invalid", code)
		require.Equal(t, "params.app", field, "field names the first")
		errs := r.body["error"].(map[string]any)["errors"].([]any)
		var fields []string
		for _, e := range errs {
			fields = append(fields, e.(map[string]any)["field"].(string))
		}
		require.Equal(t, []string{"params.app", "params.version", "params.replicas"}, fields)
		r = b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"web-service","params":{"app":"shop"}}`, nil)
		require.NotContains(t, r.body["error"], "errors", "one error: no list")
	})

	t.Run("TooLarge", func(t *testing.T) {
		big := `{"kind":"agent","prompt":"` + strings.Repeat("x", 2<<20) + `"}`
		r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, big, nil)
		require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
		code, _ := errCode(r)
		require.Equal(t, "too_large", code)
	})

	t.Run("ViewerIsForbidden", func(t *testing.T) {
		_, err := b.store.UserAdd(t.Context(), store.UserAddParams{Email: "vic@acme.test", Team: "acme", Role: auth.RoleViewer})
		require.NoError(t, err)
		secret, h := auth.NewSecret(auth.TokenPrefix)
		require.NoError(t, b.store.TokenCreate(t.Context(), "vic@acme.test", "", h))
		r := b.api(t, "POST", "/api/v1/tasks", secret, good, nil)
		require.Equal(t, http.StatusForbidden, r.status)
		code, _ := errCode(r)
		require.Equal(t, "forbidden", code)
	})
}

func countTasks(t *testing.T, b *testBundle) int {
	var n int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM tasks`).Scan(&n))
	return n
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"kind":"deploy","pipeline":"noop","params":{}}`
	same := `{ "params": {}, "pipeline": "noop", "kind": "deploy" }`
	key := map[string]string{"Idempotency-Key": "deploy-42"}

	first := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, body, key)
	require.Equal(t, http.StatusAccepted, first.status)
	again := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, same, key)
	require.Equal(t, http.StatusOK, again.status, "same JSON value replays")
	require.Equal(t, first.body["id"], again.body["id"])
	other := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop","priority":"high"}`, key)
	require.Equal(t, http.StatusConflict, other.status)
	code, _ := errCode(other)
	require.Equal(t, "idempotency_conflict", code)
	bob := b.api(t, "POST", "/api/v1/tasks", b.bobToken, body, key)
	require.Equal(t, http.StatusAccepted, bob.status, "keys are per team")

	var wg sync.WaitGroup
	ids := make([]any, 50)
	race := map[string]string{"Idempotency-Key": "race"}
	for i := range ids {
		wg.Go(func() {
			r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, body, race)
			ids[i] = r.body["id"]
		})
	}
	wg.Wait()
	for _, id := range ids {
		require.NotNil(t, id)
		require.Equal(t, ids[0], id, "50 concurrent identical requests make one task")
	}
}

func TestQueueFull(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(c *configT) { c.MaxPending = 2 })
	body := `{"kind":"deploy","pipeline":"noop"}`
	for range 2 {
		require.Equal(t, http.StatusAccepted, b.api(t, "POST", "/api/v1/tasks", b.aliceToken, body, nil).status)
	}
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, body, nil)
	require.Equal(t, http.StatusTooManyRequests, r.status)
	code, _ := errCode(r)
	require.Equal(t, "queue_full", code)
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.Equal(t, http.StatusAccepted, b.api(t, "POST", "/api/v1/tasks", b.bobToken, body, nil).status, "per team")
}

func TestCancelAndPriority(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	id := r.body["id"].(string)

	p := b.api(t, "PATCH", "/api/v1/tasks/"+id, b.aliceToken, `{"priority":"hotfix"}`, nil)
	require.Equal(t, http.StatusOK, p.status, p.raw)
	require.Equal(t, "hotfix", p.body["priority"])
	require.Equal(t, http.StatusNotFound, b.api(t, "POST", "/api/v1/tasks/"+id+"/cancel", b.bobToken, "", nil).status)

	c := b.api(t, "POST", "/api/v1/tasks/"+id+"/cancel", b.aliceToken, "", nil)
	require.Equal(t, http.StatusAccepted, c.status, c.raw)
	require.Equal(t, "cancelled", c.body["state"])
	again := b.api(t, "POST", "/api/v1/tasks/"+id+"/cancel", b.aliceToken, "", nil)
	require.Equal(t, http.StatusConflict, again.status)
	code, _ := errCode(again)
	require.Equal(t, "conflict", code)
	require.Equal(t, http.StatusConflict, b.api(t, "PATCH", "/api/v1/tasks/"+id, b.aliceToken, `{"priority":"low"}`, nil).status)
}

func TestListTasks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for range 5 {
		require.Equal(t, http.StatusAccepted, b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil).status)
	}
	require.Equal(t, http.StatusAccepted, b.api(t, "POST", "/api/v1/tasks", b.bobToken, `{"kind":"deploy","pipeline":"noop"}`, nil).status)
	seen := map[any]bool{}
	path := "/api/v1/tasks?limit=2"
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5)
		r := b.api(t, "GET", path, b.aliceToken, "", nil)
		require.Equal(t, http.StatusOK, r.status)
		for _, tk := range r.body["tasks"].([]any) {
			m := tk.(map[string]any)
			require.Equal(t, "acme", m["team"])
			require.False(t, seen[m["id"]], "no repeats across pages")
			seen[m["id"]] = true
		}
		next, ok := r.body["next"].(string)
		if !ok {
			break
		}
		path = "/api/v1/tasks?limit=2&before=" + next
	}
	require.Len(t, seen, 5)
	require.Equal(t, http.StatusUnprocessableEntity, b.api(t, "GET", "/api/v1/tasks?state=bogus", b.aliceToken, "", nil).status)
	require.Equal(t, http.StatusUnprocessableEntity, b.api(t, "GET", "/api/v1/tasks?before=garbage", b.aliceToken, "", nil).status)
}

func TestEventsAndSSEResume(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	id := r.body["id"].(string)
	// Four more events, then cancel (terminal): seq 1..6.
	for _, p := range []string{"high", "low", "hotfix", "normal"} {
		require.Equal(t, http.StatusOK, b.api(t, "PATCH", "/api/v1/tasks/"+id, b.aliceToken, fmt.Sprintf(`{"priority":%q}`, p), nil).status)
	}

	list := b.api(t, "GET", "/api/v1/tasks/"+id+"/events?after_seq=2", b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, list.status)
	evs := list.body["events"].([]any)
	require.Len(t, evs, 3)
	require.EqualValues(t, 3, evs[0].(map[string]any)["seq"])

	// SSE from Last-Event-ID 3 (wins over after_seq=0), live until the terminal event.
	req, err := http.NewRequestWithContext(t.Context(), "GET", b.srv.URL+"/api/v1/tasks/"+id+"/events?after_seq=0", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.aliceToken)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "3")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	sc := bufio.NewScanner(res.Body)
	var ids []string
	readUntil := func(n int) {
		for len(ids) < n && sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				ids = append(ids, v)
			}
		}
	}
	readUntil(2)
	require.Equal(t, []string{"4", "5"}, ids)
	require.Equal(t, http.StatusAccepted, b.api(t, "POST", "/api/v1/tasks/"+id+"/cancel", b.aliceToken, "", nil).status)
	readUntil(4)
	require.Equal(t, []string{"4", "5", "6", "7"}, ids, "live events follow the replay without gap or repeat")
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, res.Body); close(done) }()
	select {
	case <-done: // the stream ended after the terminal event
	case <-time.After(10 * time.Second):
		t.Fatal("stream did not end after the terminal event")
	}

	// A resume at or past the terminal event (7) of the finished task:
	// 204 at once, so EventSource stops reconnecting.
	sse := func(header map[string]string, query string) *http.Response {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, "GET", b.srv.URL+"/api/v1/tasks/"+id+"/events"+query, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+b.aliceToken)
		req.Header.Set("Accept", "text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err, "answered at once, not kept open")
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	for _, tc := range []struct {
		header map[string]string
		query  string
	}{
		{map[string]string{"Last-Event-ID": "7"}, ""},
		{map[string]string{"Last-Event-ID": "99"}, ""},
		{nil, "?after_seq=7"},
		{map[string]string{"Last-Event-ID": "7"}, "?after_seq=2"},
	} {
		res := sse(tc.header, tc.query)
		require.Equal(t, http.StatusNoContent, res.StatusCode, "%v %s", tc.header, tc.query)
	}
	res = sse(map[string]string{"Last-Event-ID": "6"}, "")
	require.Equal(t, http.StatusOK, res.StatusCode, "before the terminal event: the rest is streamed")
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), "id: 7\n")
}

// Every GET answers HEAD alike, without a body. Before, HEAD /api/v1/tasks
// (and every other GET route) answered 404.
func TestHeadIsGetWithoutABody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.submitDeploy(t, "noop")
	for path, want := range map[string]int{
		"/api/v1/tasks":                        http.StatusOK,
		"/api/v1/tasks/" + id:                  http.StatusOK,
		"/api/v1/tasks/" + store.NewTaskID():   http.StatusNotFound,
		"/api/v1/tasks/" + id + "/events":      http.StatusOK,
		"/api/v1/me":                           http.StatusOK,
		"/healthz":                             http.StatusOK,
		"/api/v1/openapi.json":                 http.StatusOK,
		"/api/v1/tasks?state=nonsense&limit=x": http.StatusUnprocessableEntity,
	} {
		get := b.api(t, http.MethodGet, path, b.aliceToken, "", nil)
		head := b.api(t, http.MethodHead, path, b.aliceToken, "", nil)
		require.Equal(t, want, head.status, path)
		require.Equal(t, get.status, head.status, path)
		require.Equal(t, get.header.Get("Content-Type"), head.header.Get("Content-Type"), path)
		require.Empty(t, head.raw, path)
	}
	res, err := http.DefaultClient.Do(must(http.NewRequestWithContext(t.Context(), http.MethodPost, b.srv.URL+"/api/v1/tasks", nil)))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "only HEAD is read as GET")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The 202 of a new deploy shows what GET shows: its planned steps and
// their count. Before, it said "steps":[] and a total of 0 while GET
// listed the four steps of web-service.
func TestSubmitAnswerShowsThePlannedSteps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/api/v1/tasks", "rerun"} {
		var r apiResp
		if path == "rerun" {
			id := b.submitDeploy(t, "noop")
			_, err := b.store.TaskCancel(t.Context(), []string{b.teamOf(t, id)}, id, "test")
			require.NoError(t, err)
			r = b.api(t, "POST", "/api/v1/tasks/"+id+"/rerun", b.aliceToken, "", nil)
		} else {
			r = b.api(t, "POST", path, b.aliceToken, `{"kind":"deploy","pipeline":"web-service","params":{"app":"shop","version":"1.2.3"}}`, nil)
		}
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		got := b.api(t, "GET", "/api/v1/tasks/"+r.body["id"].(string), b.aliceToken, "", nil)
		require.NotEmpty(t, got.body["steps"], path)
		require.Equal(t, got.body["steps"], r.body["steps"], path)
		require.Equal(t, got.body["progress"], r.body["progress"], path)
		total := got.body["progress"].(map[string]any)["total_step"]
		require.EqualValues(t, len(got.body["steps"].([]any)), total, path)
	}
}

func (b *testBundle) teamOf(t *testing.T, taskID string) string {
	t.Helper()
	var teamID string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT team_id FROM tasks WHERE id = $1`, taskID).Scan(&teamID))
	return teamID
}
