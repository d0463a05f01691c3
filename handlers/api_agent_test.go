package handlers_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/config"
	"flightdeck/internal/llmtest"
	"flightdeck/workflow/agent"
	"flightdeck/workflow/event"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

// setupAgents is setup with an LLM configured (the fake server) and a
// worker pool running agent tasks.
func setupAgents(t *testing.T) (*testBundle, *llmtest.Server) {
	t.Helper()
	llm := llmtest.New(t)
	b := setupWith(t, func(c *config.Config) { c.OpenAIBaseURL = llm.URL })
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	r := agent.NewRunner(agent.Config{Client: agent.NewOpenAI(agent.OpenAIConfig{BaseURL: llm.URL}), Logger: logger,
		Retry: agent.RetryConfig{BackoffBase: time.Millisecond}})
	n := event.NewNotifier(b.store, nil)
	p := queue.New(b.store, map[task.Kind]queue.Handler{task.KindAgent: r}, nil, queue.Config{
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
