package handlers_test

import (
	"context"
	"encoding/json"
	"flightdeck/internal/notify"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/store"
	"flightdeck/workflow/action"
	"flightdeck/workflow/artifact"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

const testSecret = "hunter2-Very-Secret-Value"

// secretBundle is a server offering secret-deploy (a secret parameter and
// an approval before its one step), with a saga worker pool whose step
// records the params it runs with and echoes the secret in its output.
type secretBundle struct {
	*testBundle
	mu  sync.Mutex
	ran map[string]map[string]any // task id: params its step got
}

func setupSecrets(t *testing.T) *secretBundle {
	t.Helper()
	return setupRecording(t, &pipeline.Pipeline{Name: "secret-deploy",
		Params: []pipeline.Param{
			{Name: "app", Type: "string", Pattern: "^[a-z]+$", Required: true},
			{Name: "db_password", Type: "string", Pattern: "^[A-Za-z0-9-]+$", Secret: true},
		},
		Steps: []pipeline.Step{{Name: "release", Action: "test.record", Approval: &pipeline.Approval{}}},
	})
}

// setupRecording is a server offering the built-in pipelines and extra,
// with a saga worker pool whose action test.record records the params
// its step runs with and echoes db_password in its output.
func setupRecording(t *testing.T, extra ...*pipeline.Pipeline) *secretBundle {
	t.Helper()
	catalog, err := pipeline.NewCatalog(append(pipeline.Builtin(), extra...)...)
	require.NoError(t, err)
	sb := &secretBundle{testBundle: setupCatalog(t, nil, catalog), ran: map[string]map[string]any{}}
	record := action.Func(func(ctx context.Context, in action.Input) (json.RawMessage, error) {
		sb.mu.Lock()
		sb.ran[in.TaskID] = in.Params
		sb.mu.Unlock()
		line := fmt.Sprintf("connecting with password %v", in.Params["db_password"])
		in.Log(line)
		_, _ = fmt.Fprintln(in.Output, line)
		return json.RawMessage(`{"ok":true}`), nil
	})
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := saga.NewRunner(saga.Config{Catalog: catalog, Logger: logger, RetryBase: time.Millisecond, FlushInterval: 10 * time.Millisecond,
		Actions: action.Registry{"test.record": record}, Artifacts: artifactSink{artifact.New(sb.store, 0)}})
	n := notify.NewListener(sb.store, nil)
	p := queue.New(sb.store, map[task.Kind]queue.Handler{task.KindDeploy: runner}, queue.Config{
		Workers: 2, PollInterval: 20 * time.Millisecond, Grace: 10 * time.Millisecond, Logger: logger})
	p.Attach(n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(ctx) })
	wg.Go(func() { _ = p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return sb
}

// artifactSink adapts artifact.Store to the saga runner's ArtifactSink.
type artifactSink struct{ s *artifact.Store }

func (k artifactSink) Create(ctx context.Context, taskID, teamID string, stepIdx int, name string, secrets []string) (saga.ArtifactWriter, error) {
	return k.s.Create(ctx, taskID, teamID, stepIdx, name, secrets)
}

func (sb *secretBundle) ranWith(t *testing.T, id string) map[string]any {
	t.Helper()
	sb.mu.Lock()
	defer sb.mu.Unlock()
	p, ok := sb.ran[id]
	require.True(t, ok, "task %s never ran its step", id)
	return p
}

// approver adds an approver of acme (not the tasks' creator) and returns
// their API token and a signed-in browser.
func (sb *secretBundle) approver(t *testing.T) (string, *http.Client) {
	t.Helper()
	hash, err := testPasswordHash()
	require.NoError(t, err)
	_, err = sb.store.UserAdd(t.Context(), store.UserAddParams{Email: "ann@acme.test", Team: "acme", Role: auth.RoleApprover, PasswordHash: hash})
	require.NoError(t, err)
	secret, h := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, sb.store.TokenCreate(t.Context(), "ann@acme.test", "test", h))
	c := sb.browser(t)
	sb.login(t, c, "ann@acme.test", testPassword)
	return secret, c
}

func TestSecretParamsNeverShown(t *testing.T) {
	t.Parallel()
	sb := setupSecrets(t)
	annToken, ann := sb.approver(t)
	notSecret := func(what, s string) {
		t.Helper()
		require.NotContains(t, s, testSecret, what)
	}

	feed, _, err := sb.dialWS(t, sb.aliceToken, nil)
	require.NoError(t, err)
	feed.send(`{"type":"subscribe","topic":"team","id":"t"}`)
	require.Equal(t, "ack", feed.next()["type"])

	r := sb.api(t, http.MethodPost, "/api/v1/tasks", sb.aliceToken,
		`{"kind":"deploy","pipeline":"secret-deploy","params":{"app":"shop","db_password":"`+testSecret+`"}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	notSecret("submit response", r.raw)
	require.Equal(t, map[string]any{"app": "shop", "db_password": "[REDACTED]"}, r.body["params"], "set, but not shown")
	id := r.body["id"].(string)

	// Parked on the approval: what the approver sees.
	r = sb.waitState(t, id, "awaiting_approval")
	notSecret("task awaiting approval", r.raw)
	aps := r.body["approvals"].([]any)
	require.Len(t, aps, 1)
	ap := aps[0].(map[string]any)
	require.Equal(t, map[string]any{"action": "test.record", "params": map[string]any{"app": "shop", "db_password": "[REDACTED]"}}, ap["detail"],
		"the approval detail shows the public params")

	_, body := sb.get(t, ann, "/approvals", nil)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	item := doc.Find(`[data-testid="inbox-item"]`)
	require.Equal(t, 1, item.Length())
	require.Equal(t, id, item.AttrOr("data-task", ""))
	require.Contains(t, item.Text(), "[REDACTED]")
	notSecret("approvals inbox", body)

	r = sb.api(t, http.MethodPost, "/api/v1/tasks/"+id+"/approvals/"+ap["id"].(string)+"/approve", annToken, `{"comment":"ok"}`, nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	r = sb.waitState(t, id, "completed")
	notSecret("completed task", r.raw)
	require.Equal(t, testSecret, sb.ranWith(t, id)["db_password"], "the step runs with the real value")

	r = sb.api(t, http.MethodGet, "/api/v1/tasks?pipeline=secret-deploy", sb.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Len(t, r.body["tasks"], 1)
	notSecret("task list", r.raw)

	r = sb.api(t, http.MethodGet, "/api/v1/tasks/"+id+"/events", sb.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status)
	notSecret("events", r.raw)
	require.Contains(t, r.raw, "connecting with password [REDACTED]", "the step's log line, redacted")

	arts := sb.api(t, http.MethodGet, "/api/v1/tasks/"+id, sb.aliceToken, "", nil).body["artifacts"].([]any)
	require.NotEmpty(t, arts)
	for _, a := range arts {
		res, raw := sb.get(t, sb.srv.Client(), "/api/v1/artifacts/"+a.(map[string]any)["id"].(string),
			map[string]string{"Authorization": "Bearer " + sb.aliceToken})
		require.Equal(t, http.StatusOK, res.StatusCode)
		notSecret("artifact", raw)
	}

	alice := sb.browser(t)
	sb.login(t, alice, "alice@acme.test", testPassword)
	res, page := sb.get(t, alice, "/tasks/"+id, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, page, "[REDACTED]")
	notSecret("task page", page)

	// Every task frame of the team feed, up to the completed task.
	for {
		m := feed.next()
		raw, err := json.Marshal(m)
		require.NoError(t, err)
		notSecret("team feed frame", string(raw))
		if tk, ok := m["task"].(map[string]any); ok && tk["state"] == "completed" {
			require.Equal(t, map[string]any{"app": "shop", "db_password": "[REDACTED]"}, tk["params"])
			break
		}
	}
	// And the task's events replayed over the socket.
	ws, _, err := sb.dialWS(t, sb.aliceToken, nil)
	require.NoError(t, err)
	ws.send(fmt.Sprintf(`{"type":"subscribe","task_id":%q,"after_seq":0,"id":"s"}`, id))
	for {
		m := ws.next()
		raw, err := json.Marshal(m)
		require.NoError(t, err)
		notSecret("task event frame", string(raw))
		if ev, ok := m["event"].(map[string]any); ok && ev["type"] == string(task.EventTaskCompleted) {
			break
		}
	}
}

func TestSecretParamsFromTheForm(t *testing.T) {
	t.Parallel()
	sb := setupSecrets(t)
	c := sb.browser(t)
	sb.login(t, c, "alice@acme.test", testPassword)
	tok := sb.csrfFrom(t, c, "/tasks/new?pipeline=secret-deploy")
	res, err := c.PostForm(sb.srv.URL+"/tasks", url.Values{"_csrf": {tok}, "pipeline": {"secret-deploy"}, "app": {"shop"}, "db_password": {testSecret}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	id := strings.TrimPrefix(res.Header.Get("Location"), "/tasks/")

	r := sb.waitState(t, id, "awaiting_approval")
	require.NotContains(t, r.raw, testSecret)
	require.Equal(t, map[string]any{"app": "shop", "db_password": "[REDACTED]"}, r.body["params"])
	_, page := sb.get(t, c, "/tasks/"+id, nil)
	require.NotContains(t, page, testSecret)

	// Only a worker reads the real value.
	teamID, err := sb.store.TeamIDByName(t.Context(), "acme")
	require.NoError(t, err)
	raw, err := sb.store.TaskSecretParams(t.Context(), []string{teamID}, id)
	require.NoError(t, err)
	require.JSONEq(t, `{"db_password":"`+testSecret+`"}`, string(raw))
}
