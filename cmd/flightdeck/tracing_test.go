package main

import (
	"context"
	"encoding/json"
	"flightdeck/internal/notify"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"flightdeck/handlers"
	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/llmtest"
	"flightdeck/internal/tracing"
	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
	"flightdeck/workflow/webhook"
)

// Tracing is process-wide: the first test that needs it installs one
// in-memory exporter, and each test picks its own task's spans from it
// (other tests of this package then make spans too, which is harmless).
var (
	traceOnce sync.Once
	traceExp  *tracetest.InMemoryExporter
)

func traceSpans(t *testing.T) func() tracetest.SpanStubs {
	traceOnce.Do(func() {
		traceExp = tracetest.NewInMemoryExporter()
		tracing.Use(sdktrace.NewTracerProvider(sdktrace.WithSyncer(traceExp)))
	})
	return traceExp.GetSpans
}

// tracedStack is a server, worker pool and webhook sender as serve wires
// them, with a deployer's API token.
type tracedStack struct {
	st    *store.Store
	url   string
	token string
	team  []string
}

func newTracedStack(t *testing.T, env map[string]string, extra ...*pipeline.Pipeline) *tracedStack {
	st := dbtest.Store(t)
	ctx := t.Context()
	id, err := st.UserAdd(ctx, store.UserAddParams{Email: "dev@acme.test", Team: "acme", Role: auth.RoleDeployer})
	require.NoError(t, err)
	token, hash := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, st.TokenCreate(ctx, "dev@acme.test", "cli", hash))
	u, err := st.UserGet(ctx, id)
	require.NoError(t, err)

	cfg, err := config.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	catalog, err := pipeline.NewCatalog(append(pipeline.Builtin(), extra...)...)
	require.NoError(t, err)
	guard, err := webhook.NewGuard([]string{"127.0.0.1"}, nil)
	require.NoError(t, err)
	n := notify.NewListener(st, logger)
	hub := notify.NewHub()
	hub.Attach(n)
	t.Cleanup(hub.Follow(st.Wakeups()))
	pool := queue.New(st, taskHandlers(cfg, st, catalog, logger, nil),
		queue.Config{Workers: 2, PollInterval: 20 * time.Millisecond, Logger: logger})
	pool.Attach(n)
	srv := httptest.NewServer(handlers.New(handlers.Deps{Config: cfg, Store: st, Logger: logger, Pipelines: catalog, Hub: hub, WebhookGuard: guard}))
	bg, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(bg) })
	wg.Go(func() { _ = pool.Run(bg) })
	wg.Go(func() {
		_ = webhook.New(st, hub, webhook.Config{Guard: guard, Poll: 20 * time.Millisecond, Logger: logger}).Run(bg)
	})
	t.Cleanup(func() { srv.Close(); cancel(); wg.Wait() })
	return &tracedStack{st: st, url: srv.URL, token: token, team: u.TeamIDs()}
}

// submit posts a task over the API and returns its id.
func (s *tracedStack) submit(t *testing.T, body string) string {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/api/v1/tasks", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusAccepted, res.StatusCode, string(b))
	var tk struct{ ID string }
	require.NoError(t, json.Unmarshal(b, &tk))
	return tk.ID
}

func (s *tracedStack) waitState(t *testing.T, id string, want task.State) {
	require.Eventually(t, func() bool {
		tk, err := s.st.TaskGet(context.Background(), s.team, id)
		return err == nil && tk.State == want
	}, 30*time.Second, 20*time.Millisecond)
}

// taskSpans are the spans of one task (by its id attribute), by name, once
// those named have ended (a run's ends after its outcome is written, a
// delivery's after the receiver answered).
func taskSpans(t *testing.T, spans func() tracetest.SpanStubs, id string, names ...string) map[string][]tracetest.SpanStub {
	var out map[string][]tracetest.SpanStub
	require.Eventually(t, func() bool {
		out = map[string][]tracetest.SpanStub{}
		for _, s := range spans() {
			for _, a := range s.Attributes {
				if a.Key == "flightdeck.task.id" && a.Value.AsString() == id {
					out[s.Name] = append(out[s.Name], s)
				}
			}
		}
		for _, n := range names {
			if len(out[n]) == 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "spans %v", names)
	return out
}

func spanByID(spans tracetest.SpanStubs, id trace.SpanID) (tracetest.SpanStub, bool) {
	for _, s := range spans {
		if s.SpanContext.SpanID() == id {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

func traceparentOf(s tracetest.SpanStub) string {
	return fmt.Sprintf("00-%s-%s-01", s.SpanContext.TraceID(), s.SpanContext.SpanID())
}

func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

// requireSubmitLink checks a run is a trace of its own linked to the
// request span that submitted its task.
func requireSubmitLink(t *testing.T, spans tracetest.SpanStubs, run tracetest.SpanStub) {
	t.Helper()
	require.Len(t, run.Links, 1, "the run links to its submit")
	req, ok := spanByID(spans, run.Links[0].SpanContext.SpanID())
	require.True(t, ok, "the linked span was exported")
	require.Equal(t, "POST /api/v1/tasks", req.Name)
	require.Equal(t, trace.SpanKindServer, req.SpanKind)
	require.Equal(t, req.SpanContext.TraceID(), run.Links[0].SpanContext.TraceID())
	require.NotEqual(t, req.SpanContext.TraceID(), run.SpanContext.TraceID(), "a run is a trace of its own")
	require.False(t, run.Parent.IsValid(), "a run is a root span")
}

// TestTracingDeploy submits a deploy over HTTP whose last step fails: the
// run span links to the request span, every step attempt and compensation
// is a span under it, the http action and the webhook delivery carry their
// span's traceparent and the exec step sees its own as TRACEPARENT.
func TestTracingDeploy(t *testing.T) {
	t.Parallel()
	spans := traceSpans(t)

	var mu sync.Mutex
	got := map[string]string{} // path → traceparent received
	hooked := make(chan struct{}, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		got[r.URL.Path] = r.Header.Get("traceparent")
		mu.Unlock()
		if r.URL.Path == "/hook" {
			hooked <- struct{}{}
		}
	}))
	t.Cleanup(recv.Close)

	dir := t.TempDir()
	tpFile := filepath.Join(dir, "traceparent")
	p, err := pipeline.Parse("traced.yaml", []byte(fmt.Sprintf(`
name: traced
steps:
  - name: build
    action: exec
    with: {command: ["sh", "-c", "printf %%s \"$TRACEPARENT\" > %s"]}
    compensate: {action: exec, with: {command: ["true"]}}
  - name: notify
    action: http
    with: {method: POST, url: "%s/action"}
    compensate: {action: http, with: {method: POST, url: "%s/undo"}}
  - name: smoke
    action: exec
    with: {command: ["false"]}
`, tpFile, recv.URL, recv.URL)))
	require.NoError(t, err)
	s := newTracedStack(t, nil, p)

	id := s.submit(t, `{"kind":"deploy","pipeline":"traced","webhook":{"url":"`+recv.URL+`/hook","secret":"0123456789abcdef0123"}}`)
	s.waitState(t, id, task.StateFailed)
	select {
	case <-hooked:
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook delivery")
	}

	byName := taskSpans(t, spans, id, "task.run deploy", "webhook.deliver")
	all := spans()
	require.Len(t, byName["task.run deploy"], 1)
	run := byName["task.run deploy"][0]
	requireSubmitLink(t, all, run)
	require.Equal(t, "failed", attr(run, "flightdeck.task.state"))
	require.Equal(t, "traced", attr(run, "flightdeck.task.pipeline"))
	require.Equal(t, "Error", run.Status.Code.String())

	for _, name := range []string{"step build", "step notify", "step smoke", "compensate notify", "compensate build"} {
		require.Len(t, byName[name], 1, name)
		sp := byName[name][0]
		require.Equal(t, run.SpanContext.SpanID(), sp.Parent.SpanID(), "%s is a child of the run", name)
		require.Equal(t, run.SpanContext.TraceID(), sp.SpanContext.TraceID())
		require.Equal(t, "1", attr(sp, "flightdeck.step.attempt"), name)
		require.Equal(t, "traced", attr(sp, "flightdeck.task.pipeline"), name)
	}
	smoke := byName["step smoke"][0]
	require.Equal(t, "Error", smoke.Status.Code.String())
	require.Equal(t, "error", attr(smoke, "flightdeck.outcome"))
	require.Equal(t, "ok", attr(byName["step build"][0], "flightdeck.outcome"))
	require.Equal(t, "true", attr(byName["compensate build"][0], "flightdeck.step.compensating"))
	require.True(t, byName["compensate notify"][0].EndTime.Before(byName["compensate build"][0].StartTime.Add(time.Nanosecond)),
		"compensations run in reverse order")

	exported, err := os.ReadFile(tpFile)
	require.NoError(t, err)
	require.Equal(t, traceparentOf(byName["step build"][0]), string(exported), "exec sees its step span as TRACEPARENT")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, traceparentOf(byName["step notify"][0]), got["/action"], "the http action sends its step span")
	require.Equal(t, traceparentOf(byName["compensate notify"][0]), got["/undo"], "the undo sends its compensation span")

	hook := byName["webhook.deliver"][len(byName["webhook.deliver"])-1]
	require.Equal(t, traceparentOf(hook), got["/hook"], "the delivery sends its span")
	require.Len(t, hook.Links, 1)
	require.Equal(t, run.Links[0].SpanContext.SpanID(), hook.Links[0].SpanContext.SpanID(), "the delivery links to the submit too")
}

// TestTracingAgent runs an agent task (a fake OpenAI server) that calls a
// tool, then answers: each model call and the tool are spans of its run.
func TestTracingAgent(t *testing.T) {
	t.Parallel()
	spans := traceSpans(t)
	llm := llmtest.New(t)
	llm.Push(llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("call_1", "list_pipelines", map[string]any{})}},
		llmtest.Reply{Content: "There are pipelines."})
	s := newTracedStack(t, map[string]string{"OPENAI_BASE_URL": llm.URL, "FLIGHTDECK_LLM_RETRIES": "0"})

	id := s.submit(t, `{"kind":"agent","prompt":"which pipelines are there?"}`)
	s.waitState(t, id, task.StateCompleted)

	byName := taskSpans(t, spans, id, "task.run agent")
	require.Len(t, byName["task.run agent"], 1)
	run := byName["task.run agent"][0]
	requireSubmitLink(t, spans(), run)
	require.Equal(t, "completed", attr(run, "flightdeck.task.state"))

	require.Len(t, byName["agent.model_call"], 2, "two model calls")
	for i, mc := range byName["agent.model_call"] {
		require.Equal(t, run.SpanContext.SpanID(), mc.Parent.SpanID())
		require.Equal(t, fmt.Sprint(i+1), attr(mc, "flightdeck.agent.iteration"))
		require.Equal(t, trace.SpanKindClient, mc.SpanKind)
	}
	require.Len(t, byName["agent.tool list_pipelines"], 1)
	tool := byName["agent.tool list_pipelines"][0]
	require.Equal(t, run.SpanContext.SpanID(), tool.Parent.SpanID())
	require.Equal(t, "call_1", attr(tool, "flightdeck.agent.call_id"))
	require.Equal(t, "ok", attr(tool, "flightdeck.outcome"))
	require.True(t, tool.StartTime.After(byName["agent.model_call"][0].EndTime), "the tool runs between the model calls")
	require.True(t, tool.EndTime.Before(byName["agent.model_call"][1].StartTime))
}
