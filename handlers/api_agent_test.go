package handlers_test

import (
	"context"
	"flightdeck/internal/notify"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/config"
	"flightdeck/internal/llmtest"
	"flightdeck/store"
	"flightdeck/workflow/agent"
	"flightdeck/workflow/artifact"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

// setupAgents is setup with an LLM configured (the fake server) and a
// worker pool running agent tasks.
func setupAgents(t *testing.T) (*testBundle, *llmtest.Server) {
	return setupAgentsWith(t, nil)
}

func setupAgentsWith(t *testing.T, deployWith func(*store.Store) queue.Handler) (*testBundle, *llmtest.Server) {
	t.Helper()
	llm := llmtest.New(t)
	b := setupWith(t, func(c *config.Config) { c.OpenAIBaseURL = llm.URL })
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	r := agent.NewRunner(agent.Config{Client: agent.NewOpenAI(agent.OpenAIConfig{BaseURL: llm.URL}), Logger: logger, Store: b.store,
		Retry: agent.RetryConfig{BackoffBase: time.Millisecond}})
	n := notify.NewListener(b.store, nil)
	handlers := map[task.Kind]queue.Handler{task.KindAgent: r}
	if deployWith != nil {
		handlers[task.KindDeploy] = deployWith(b.store)
	}
	p := queue.New(b.store, handlers, queue.Config{
		Workers: 2, PollInterval: 20 * time.Millisecond, Grace: 10 * time.Millisecond, Logger: logger})
	p.Attach(n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(ctx) })
	wg.Go(func() { _ = p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return b, llm
}

func (b *testBundle) waitState(t *testing.T, id, state string) apiResp {
	t.Helper()
	var r apiResp
	require.Eventually(t, func() bool {
		r = b.api(t, http.MethodGet, "/api/v1/tasks/"+id, b.aliceToken, "", nil)
		return r.body["state"] == state
	}, 30*time.Second, 20*time.Millisecond, "task never reached %s", state)
	return r
}

func TestAgentAPI(t *testing.T) {
	t.Parallel()

	t.Run("QuestionAnsweredOverHTTP", func(t *testing.T) {
		t.Parallel()
		b, llm := setupAgents(t)
		llm.Push(
			llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("q1", "ask_user", map[string]any{"question": "Which env? <script>alert(1)</script>"})}},
			llmtest.Reply{Content: "Done <b>here</b>"},
		)
		r := b.api(t, http.MethodPost, "/api/v1/tasks", b.aliceToken, `{"kind":"agent","prompt":"check shop"}`, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		id := r.body["id"].(string)
		r = b.waitState(t, id, "awaiting_input")
		qs := r.body["questions"].([]any)
		require.Len(t, qs, 1)
		q := qs[0].(map[string]any)
		require.Equal(t, "pending", q["state"])
		qid := q["id"].(string)

		// Another team's user: the task does not exist for them.
		r = b.api(t, http.MethodPost, "/api/v1/tasks/"+id+"/questions/"+qid+"/answer", b.bobToken, `{"text":"prod"}`, nil)
		require.Equal(t, http.StatusNotFound, r.status)
		r = b.api(t, http.MethodPost, "/api/v1/tasks/"+id+"/questions/"+qid+"/answer", b.aliceToken, `{"text":""}`, nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.status)
		r = b.api(t, http.MethodPost, "/api/v1/tasks/"+id+"/questions/"+qid+"/answer", b.aliceToken, `{"text":"staging"}`, nil)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		require.Equal(t, "answered", r.body["state"])
		r = b.api(t, http.MethodPost, "/api/v1/tasks/"+id+"/questions/"+qid+"/answer", b.aliceToken, `{"text":"again"}`, nil)
		require.Equal(t, http.StatusConflict, r.status)

		r = b.waitState(t, id, "completed")
		require.Equal(t, map[string]any{"text": "Done <b>here</b>"}, r.body["result"])

		// The page shows model text escaped.
		c := b.browser(t)
		b.login(t, c, "alice@acme.test", testPassword)
		_, page := b.get(t, c, "/tasks/"+id, nil)
		require.Contains(t, page, "Done &lt;b&gt;here&lt;/b&gt;")
		require.NotContains(t, page, "<script>alert(1)</script>")
	})

	t.Run("AnswerAndMessageOverWebSocket", func(t *testing.T) {
		t.Parallel()
		b, llm := setupAgents(t)
		llm.Push(llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("q1", "ask_user", map[string]any{"question": "Go on?"})}})
		r := b.api(t, http.MethodPost, "/api/v1/tasks", b.aliceToken, `{"kind":"agent","prompt":"work"}`, nil)
		id := r.body["id"].(string)
		r = b.waitState(t, id, "awaiting_input")
		qid := r.body["questions"].([]any)[0].(map[string]any)["id"].(string)

		ws, _, err := b.dialWS(t, b.aliceToken, nil)
		require.NoError(t, err)
		// The note is read at the next iteration, after the answer.
		ws.send(fmt.Sprintf(`{"type":"message","task_id":%q,"text":"prefer staging","id":"m1"}`, id))
		require.Equal(t, map[string]any{"type": "ack", "id": "m1"}, ws.next())
		ws.send(fmt.Sprintf(`{"type":"answer","task_id":%q,"question_id":%q,"text":"yes","id":"a1"}`, id, "00000000-0000-0000-0000-000000000000"))
		require.Equal(t, "error", ws.next()["type"])
		llm.Push(llmtest.Reply{Content: "ok"})
		ws.send(fmt.Sprintf(`{"type":"answer","task_id":%q,"question_id":%q,"text":"yes","id":"a2"}`, id, qid))
		require.Equal(t, map[string]any{"type": "ack", "id": "a2"}, ws.next())
		ws.send(fmt.Sprintf(`{"type":"answer","task_id":%q,"question_id":%q,"text":"yes","id":"a3"}`, id, qid))
		m := ws.next()
		require.Equal(t, "error", m["type"])
		require.Equal(t, "conflict", m["code"])
		b.waitState(t, id, "completed")
		reqs := llm.Requests()
		require.Len(t, reqs, 2)
		require.Equal(t, "Note from alice@acme.test: prefer staging", reqs[1].Last().Content)

		// Notes to a finished task: conflict.
		ws.send(fmt.Sprintf(`{"type":"message","task_id":%q,"text":"late","id":"m2"}`, id))
		require.Equal(t, "conflict", ws.next()["code"])
	})
}

// failingDeploy fails every deploy in its step deploy_container, keeping
// the step's output as an artifact.
func failingDeploy(st *store.Store) queue.Handler {
	return queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		w, err := artifact.New(st, 0).Create(ctx, j.Task.ID, j.Task.TeamID, 1, "deploy_container.log", nil)
		if err != nil {
			return queue.Outcome{State: task.StateFailed, Error: err.Error()}
		}
		_, _ = w.Write([]byte("starting shop\nERROR listen tcp :8080: address already in use\n"))
		if _, err := w.Close(); err != nil {
			return queue.Outcome{State: task.StateFailed, Error: err.Error()}
		}
		msg := "health check failed"
		now := time.Now()
		j.SaveStep(store.StepSave{Idx: 1, Name: "deploy_container", IdempotencyKey: "k", State: "failed", Attempt: 1, Error: &msg, StartedAt: &now, FinishedAt: &now})
		return queue.Outcome{State: task.StateFailed, Error: "step deploy_container failed: " + msg}
	})
}

func TestExplainFailure(t *testing.T) {
	t.Parallel()
	b, llm := setupAgentsWith(t, failingDeploy)
	llm.Push(llmtest.Reply{Content: "Port 8080 was taken by another process."})
	r := b.api(t, http.MethodPost, "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	deployID := r.body["id"].(string)

	r = b.api(t, http.MethodPost, "/api/v1/tasks/"+deployID+"/explain", b.bobToken, "", nil)
	require.Equal(t, http.StatusNotFound, r.status, "another team's task")
	b.waitState(t, deployID, "failed")

	// The page offers the action.
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	_, page := b.get(t, c, "/tasks/"+deployID, nil)
	require.Contains(t, page, `data-testid="explain-failure"`)

	r = b.api(t, http.MethodPost, "/api/v1/tasks/"+deployID+"/explain", b.aliceToken, "", nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	require.Equal(t, "agent", r.body["kind"])
	require.Equal(t, "alice@acme.test", r.body["created_by"])
	prompt := r.body["prompt"].(string)
	require.Contains(t, prompt, "deploy_container")
	require.Contains(t, prompt, "address already in use")
	agentID := r.body["id"].(string)
	r = b.waitState(t, agentID, "completed")
	require.Equal(t, map[string]any{"text": "Port 8080 was taken by another process."}, r.body["result"])
	require.Contains(t, llm.Requests()[0].Messages[1].Content, "address already in use")

	// Only failed deploys.
	r = b.api(t, http.MethodPost, "/api/v1/tasks/"+agentID+"/explain", b.aliceToken, "", nil)
	require.Equal(t, http.StatusConflict, r.status)
}

func TestAgentBudgetsPerTask(t *testing.T) {
	t.Parallel()
	b, llm := setupAgents(t)
	llm.Fallback(func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("", "list_pipelines", map[string]any{})}}
	})
	for _, tc := range []struct{ body, field string }{
		{`{"kind":"agent","prompt":"x","budgets":{"max_iterations":0}}`, "budgets.max_iterations"},
		{`{"kind":"agent","prompt":"x","budgets":{"wall_clock_seconds":99999}}`, "budgets.wall_clock_seconds"},
		{`{"kind":"agent","prompt":"x","budgets":{"max_steps":3}}`, ""},
		{`{"kind":"deploy","pipeline":"noop","budgets":{"max_iterations":3}}`, "budgets"},
	} {
		r := b.api(t, http.MethodPost, "/api/v1/tasks", b.aliceToken, tc.body, nil)
		require.Contains(t, []int{http.StatusBadRequest, http.StatusUnprocessableEntity}, r.status, tc.body)
		if tc.field != "" {
			_, field := errCode(r)
			require.Equal(t, tc.field, field)
		}
	}
	r := b.api(t, http.MethodPost, "/api/v1/tasks", b.aliceToken, `{"kind":"agent","prompt":"loop","budgets":{"max_iterations":2}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	r = b.waitState(t, r.body["id"].(string), "failed")
	require.Contains(t, r.body["error"], "iteration budget used up (2 model calls)")
	require.Equal(t, map[string]any{"step": 2.0, "total_step": 2.0, "percent": 100.0}, r.body["progress"])
}

func TestAgentBudgetsServerCeiling(t *testing.T) {
	t.Parallel()
	// No worker: only what submission accepts matters here.
	b := setupWith(t, func(c *config.Config) {
		c.OpenAIBaseURL = "http://127.0.0.1:1/v1"
		c.Agent.MaxIterations, c.Agent.MaxTokens, c.Agent.MaxToolCalls, c.Agent.MaxWall = 10, 5000, 20, time.Minute
	})
	for _, tc := range []struct {
		budgets, field string
		limit          int
	}{
		{`{"max_iterations":11}`, "budgets.max_iterations", 10},
		{`{"max_tokens":5001}`, "budgets.max_tokens", 5000},
		{`{"max_tool_calls":21}`, "budgets.max_tool_calls", 20},
		{`{"wall_clock_seconds":61}`, "budgets.wall_clock_seconds", 60},
	} {
		r := b.api(t, http.MethodPost, "/api/v1/tasks", b.aliceToken, `{"kind":"agent","prompt":"x","budgets":`+tc.budgets+`}`, nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, tc.budgets)
		code, field := errCode(r)
		require.Equal(t, "invalid", code)
		require.Equal(t, tc.field, field)
		require.Contains(t, r.raw, fmt.Sprintf("between 1 and %d (this server's limit)", tc.limit))
	}
	r := b.api(t, http.MethodPost, "/api/v1/tasks", b.aliceToken,
		`{"kind":"agent","prompt":"x","budgets":{"max_iterations":10,"max_tokens":5000,"max_tool_calls":20,"wall_clock_seconds":60}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	require.Equal(t, map[string]any{"budgets": map[string]any{"max_iterations": 10.0, "max_tokens": 5000.0, "max_tool_calls": 20.0,
		"wall_clock_seconds": 60.0}}, r.body["params"], "asking exactly the ceiling is fine")

	// A budget the server leaves unset keeps the fixed cap.
	open := setupWith(t, func(c *config.Config) { c.OpenAIBaseURL = "http://127.0.0.1:1/v1"; c.Agent.MaxIterations = 10 })
	r = open.api(t, http.MethodPost, "/api/v1/tasks", open.aliceToken, `{"kind":"agent","prompt":"x","budgets":{"max_tool_calls":500}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	r = open.api(t, http.MethodPost, "/api/v1/tasks", open.aliceToken, `{"kind":"agent","prompt":"x","budgets":{"max_tool_calls":501}}`, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Contains(t, r.raw, "between 1 and 500")
	require.NotContains(t, r.raw, "server's limit")
}

func TestAgentPages(t *testing.T) {
	t.Parallel()

	t.Run("WithoutAnLLMThePageSaysHowToConfigureOne", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := b.browser(t)
		b.login(t, c, "alice@acme.test", testPassword)
		res, page := b.get(t, c, "/agent", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, page, `data-testid="agent-disabled"`)
		require.Contains(t, page, "OPENAI_BASE_URL=http://localhost:11434/v1")
		require.NotContains(t, page, `data-testid="agent-form"`)
		r := b.api(t, http.MethodPost, "/api/v1/tasks", b.aliceToken, `{"kind":"agent","prompt":"hi"}`, nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.status)
		require.Contains(t, r.raw, "OPENAI_BASE_URL")
	})

	t.Run("FormStartsAnAgentTask", func(t *testing.T) {
		t.Parallel()
		b, llm := setupAgents(t)
		llm.Push(llmtest.Reply{Content: "hello"})
		c := b.browser(t)
		b.login(t, c, "alice@acme.test", testPassword)
		tok := b.csrfFrom(t, c, "/agent")
		res, err := c.PostForm(b.srv.URL+"/agent", url.Values{"prompt": {"say hello"}, "_csrf": {tok}})
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		id := strings.TrimPrefix(res.Header.Get("Location"), "/tasks/")
		b.waitState(t, id, "completed")
		_, page := b.get(t, c, "/tasks/"+id, nil)
		require.Contains(t, page, `data-testid="agent-answer"`)
	})
}
