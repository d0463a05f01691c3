package agent_test

import (
	"context"
	"encoding/json"
	"flightdeck/internal/notify"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/llmtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/agent"
	"flightdeck/workflow/artifact"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

type testBundle struct {
	st       *store.Store
	llm      *llmtest.Server
	creator  *auth.User
	deployer *auth.User // same team, not the creator
	approver *auth.User
	cfg      agent.Config
	logger   *slog.Logger
	// deployErr, if set, makes deploy tasks fail with this error.
	deployErr string

	mu  sync.Mutex
	ran map[string]json.RawMessage // deploy task id: the params its worker got
}

// setupOpts tune setup.
type setupOpts struct {
	budgets agent.Budgets
	tools   []*agent.Tool
	secrets []string
	noPool  bool
	// pipelines are added to the built-in ones.
	pipelines []*pipeline.Pipeline
}

func setup(t *testing.T, o *setupOpts) *testBundle {
	t.Helper()
	if o == nil {
		o = &setupOpts{}
	}
	st := dbtest.Store(t)
	llm := llmtest.New(t)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	catalog, err := pipeline.NewCatalog(append(pipeline.Builtin(), o.pipelines...)...)
	require.NoError(t, err)
	b := &testBundle{st: st, llm: llm, logger: logger,
		creator:  testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer),
		deployer: testfactory.User(t, st, "other@acme.test", "acme", auth.RoleDeployer),
		approver: testfactory.User(t, st, "boss@acme.test", "acme", auth.RoleApprover),
	}
	b.cfg = agent.Config{
		Client:    agent.NewOpenAI(agent.OpenAIConfig{BaseURL: llm.URL, Model: "fake"}),
		Retry:     agent.RetryConfig{Attempts: 3, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, RequestTimeout: 2 * time.Second},
		Catalog:   catalog,
		Artifacts: artifact.New(st, 0),
		Store:     st,
		Budgets:   o.budgets,
		Tools:     o.tools,
		Logger:    logger,
		Secrets:   func() []string { return o.secrets },
	}
	if !o.noPool {
		b.startPool(t, agent.NewRunner(b.cfg))
	}
	return b
}

// startPool runs a worker pool with the agent runner and a deploy handler
// that completes (or fails) deploys at once; stop ends it gracefully.
func (b *testBundle) startPool(t *testing.T, r *agent.Runner) (stop func()) {
	deploy := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		b.mu.Lock()
		if b.ran == nil {
			b.ran = map[string]json.RawMessage{}
		}
		b.ran[j.Task.ID] = j.Task.Params
		b.mu.Unlock()
		if b.deployErr != "" {
			return queue.Outcome{State: task.StateFailed, Error: b.deployErr}
		}
		return queue.Outcome{State: task.StateCompleted}
	})
	n := notify.NewListener(b.st, nil)
	p := queue.New(b.st, map[task.Kind]queue.Handler{task.KindAgent: r, task.KindDeploy: deploy}, queue.Config{
		Workers: 2, Lease: 2 * time.Second, PollInterval: 20 * time.Millisecond, RescueInterval: 100 * time.Millisecond,
		Grace: 10 * time.Millisecond, Logger: b.logger,
	})
	p.Attach(n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(ctx) })
	wg.Go(func() { _ = p.Run(ctx) })
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func (b *testBundle) submit(t *testing.T, prompt string) *task.Task {
	t.Helper()
	tk, _, err := b.st.TaskInsert(t.Context(), store.TaskInsertParams{TeamID: b.creator.Memberships[0].TeamID, CreatedByID: b.creator.ID,
		Kind: task.KindAgent, Prompt: prompt, Priority: task.PriorityNormal, MaxAttempts: 5})
	require.NoError(t, err)
	return tk
}

// deploy submits a deploy as the API does: secret params stored apart.
func (b *testBundle) deploy(t *testing.T, pipelineName string, params map[string]any) *task.Task {
	t.Helper()
	p, ok := b.cfg.Catalog.Get(pipelineName)
	require.True(t, ok, "pipeline %s", pipelineName)
	pub, sec := p.SplitSecrets(params)
	raw, _ := json.Marshal(pub)
	var secret json.RawMessage
	if sec != nil {
		secret, _ = json.Marshal(sec)
	}
	return b.insertDeploy(t, pipelineName, raw, secret, p.TargetKey(params))
}

// legacyDeploy submits a deploy as stored before secret params were kept
// apart: all of them in params.
func (b *testBundle) legacyDeploy(t *testing.T, pipelineName string, params map[string]any) *task.Task {
	t.Helper()
	raw, _ := json.Marshal(params)
	return b.insertDeploy(t, pipelineName, raw, nil, "") // stored before deploys had target keys too
}

func (b *testBundle) insertDeploy(t *testing.T, pipelineName string, params, secret json.RawMessage, targetKey string) *task.Task {
	t.Helper()
	tk, _, err := b.st.TaskInsert(t.Context(), store.TaskInsertParams{TeamID: b.creator.Memberships[0].TeamID, CreatedByID: b.creator.ID,
		Kind: task.KindDeploy, Pipeline: pipelineName, Params: params, SecretParams: secret, Priority: task.PriorityNormal, MaxAttempts: 5,
		TargetKey: targetKey})
	require.NoError(t, err)
	return tk
}

// ranWith is the params deploy task id's worker got (real secrets included).
func (b *testBundle) ranWith(t *testing.T, id string) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	raw, ok := b.ran[id]
	require.True(t, ok, "deploy %s never ran", id)
	return string(raw)
}

func (b *testBundle) wait(t *testing.T, id string, want task.State) *task.Task {
	t.Helper()
	var got *task.Task
	require.Eventually(t, func() bool {
		tk, err := b.st.TaskGet(context.Background(), b.creator.TeamIDs(), id)
		got = tk
		return err == nil && tk.State == want
	}, 30*time.Second, 10*time.Millisecond, "task never reached %s", want)
	return got
}

func (b *testBundle) events(t *testing.T, id string) []task.Event {
	t.Helper()
	evs, err := b.st.EventList(t.Context(), b.creator.TeamIDs(), id, 0, 0)
	require.NoError(t, err)
	for i, e := range evs {
		require.Equal(t, i+1, e.Seq, "seqs are gap-free")
	}
	return evs
}

func types(evs []task.Event, prefix string) []string {
	var out []string
	for _, e := range evs {
		if strings.HasPrefix(string(e.Type), prefix) || e.Type.Terminal() {
			out = append(out, string(e.Type))
		}
	}
	return out
}

func (b *testBundle) deploys(t *testing.T) []*task.Task {
	t.Helper()
	tasks, _, err := b.st.TaskList(t.Context(), store.TaskListParams{TeamIDs: b.creator.TeamIDs(), Kind: "deploy"})
	require.NoError(t, err)
	return tasks
}

func (b *testBundle) state(t *testing.T, id string) *agent.State {
	t.Helper()
	row, err := b.st.AgentStateGet(t.Context(), id)
	require.NoError(t, err)
	s, err := agent.StateFromRow(row)
	require.NoError(t, err)
	return s
}

// toolMessage finds the tool result for call id in a request.
func toolMessage(req llmtest.Request, callID string) (string, bool) {
	for _, m := range req.Messages {
		if m.Role == "tool" && m.ToolCallID == callID {
			return m.Content, true
		}
	}
	return "", false
}

// counter is a read-only test tool that counts its runs.
func counter(name string, n *atomic.Int32, out func() string) *agent.Tool {
	return &agent.Tool{Name: name, Description: "test tool",
		Params: []agent.Param{{Name: "x", Type: "string", Description: "anything"}},
		Run: func(ctx context.Context, e *agent.Env, args map[string]any) (string, error) {
			n.Add(1)
			if out != nil {
				return out(), nil
			}
			return `{"ran":true}`, nil
		}}
}

func TestAgent(t *testing.T) {
	t.Parallel()

	t.Run("ReadOnlyToolThenFinalAnswer", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.llm.Push(
			llmtest.Reply{Content: "Let me look at the pipelines.", ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "list_pipelines", map[string]any{})}},
			llmtest.Reply{Content: "There are web-service and noop pipelines."},
		)
		tk := b.submit(t, "Which pipelines can I deploy?")
		done := b.wait(t, tk.ID, task.StateCompleted)
		require.JSONEq(t, `{"text":"There are web-service and noop pipelines."}`, string(done.Result))

		evs := b.events(t, tk.ID)
		require.Equal(t, []string{"agent.thinking", "agent.tool_call", "agent.tool_result", "agent.thinking", "task.completed"}, types(evs, "agent."))
		for _, e := range evs {
			if strings.HasPrefix(string(e.Type), "agent.") {
				require.Equal(t, 20, e.TotalStep, "total_step is the iteration budget")
			}
			switch e.Type {
			case task.EventAgentToolCall:
				require.Equal(t, "list_pipelines", e.Tool)
				require.Equal(t, task.StatusToolCall, e.Status)
				require.Equal(t, 1, e.Step)
			case task.EventAgentToolResult:
				require.Equal(t, task.StatusToolResult, e.Status)
				require.Equal(t, 1, e.Step)
			}
		}
		require.Contains(t, types(evs, "tool."), "tool.executed")

		reqs := b.llm.Requests()
		require.Len(t, reqs, 2)
		require.Equal(t, "system", reqs[0].Messages[0].Role)
		require.Equal(t, "Which pipelines can I deploy?", reqs[0].Messages[1].Content)
		require.Contains(t, reqs[0].ToolNames(), "start_deploy")
		out, ok := toolMessage(reqs[1], "c1")
		require.True(t, ok)
		require.Contains(t, out, "web-service")

		s := b.state(t, tk.ID)
		require.Equal(t, 2, s.Iteration)
		require.Equal(t, 20, s.Spend.Tokens)
		require.Equal(t, 1, s.Spend.ToolCalls)
		require.Empty(t, s.Loop.Pending)
	})

	t.Run("LargeOutputIsAnArtifactAndSecretsNeverReachTheModel", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		big := func() string {
			var sb strings.Builder
			for i := range 400 {
				fmt.Fprintf(&sb, "line %d all fine\n", i)
			}
			sb.WriteString("ERROR connection refused to db with password hunter2secret\n")
			sb.WriteString("see https://bob:pa55word@example.com/x?token=abcdef123456\n")
			return sb.String()
		}
		b := setup(t, &setupOpts{tools: []*agent.Tool{counter("dump_logs", &n, big)}, secrets: []string{"hunter2secret"}})
		b.llm.Push(llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "dump_logs", map[string]any{})}})
		var artifactID string
		b.llm.Fallback(func(req llmtest.Request) llmtest.Reply {
			last := req.Last()
			if last.ToolCallID == "c1" {
				var ref struct {
					ArtifactID string `json:"artifact_id"`
				}
				if json.Unmarshal([]byte(last.Content), &ref) == nil {
					artifactID = ref.ArtifactID
				}
				return llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c2", "search_artifact",
					map[string]any{"artifact_id": ref.ArtifactID, "pattern": "ERROR"})}}
			}
			return llmtest.Reply{Content: "The database refused connections."}
		})
		tk := b.submit(t, "Why did it fail?")
		b.wait(t, tk.ID, task.StateCompleted)
		require.NotEmpty(t, artifactID)

		reqs := b.llm.Requests()
		require.Len(t, reqs, 3)
		ref, _ := toolMessage(reqs[1], "c1")
		require.Contains(t, ref, `"summary"`)
		require.Contains(t, ref, `"top_lines"`)
		require.Less(t, len(ref), 4000, "the model gets a reference, not the whole output")
		found, _ := toolMessage(reqs[2], "c2")
		require.Contains(t, found, "401: ERROR connection refused")
		for _, r := range reqs {
			require.NotContains(t, r.Raw, "hunter2secret")
			require.NotContains(t, r.Raw, "pa55word")
			require.NotContains(t, r.Raw, "abcdef123456")
		}
		meta, err := b.st.ArtifactGet(t.Context(), b.creator.TeamIDs(), artifactID)
		require.NoError(t, err)
		require.Equal(t, tk.ID, meta.TaskID)
		var whole strings.Builder
		require.NoError(t, b.st.ArtifactChunks(t.Context(), artifactID, func(c []byte) error { whole.Write(c); return nil }))
		require.Contains(t, whole.String(), "[REDACTED]")
		require.NotContains(t, whole.String(), "hunter2secret")
		require.Contains(t, types(b.events(t, tk.ID), "artifact."), "artifact.created")
	})

	t.Run("LongListsAreSearchableLineByLine", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		var ids []string
		for i := range 30 {
			d := b.deploy(t, "web-service", map[string]any{"app": fmt.Sprintf("app%d", i), "version": "1.0.0"})
			ids = append(ids, d.ID)
		}
		for _, id := range ids {
			b.wait(t, id, task.StateCompleted)
		}
		b.llm.Push(llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "list_tasks", map[string]any{"kind": "deploy", "limit": 50})}})
		b.llm.Fallback(func(req llmtest.Request) llmtest.Reply {
			last := req.Last()
			if last.ToolCallID == "c1" {
				var ref struct {
					ArtifactID string   `json:"artifact_id"`
					TopLines   []string `json:"top_lines"`
				}
				if json.Unmarshal([]byte(last.Content), &ref) != nil || ref.ArtifactID == "" || len(ref.TopLines) < 2 {
					return llmtest.Reply{Content: "no artifact reference: " + last.Content[:min(200, len(last.Content))]}
				}
				return llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c2", "search_artifact",
					map[string]any{"artifact_id": ref.ArtifactID, "pattern": ids[7]})}}
			}
			return llmtest.Reply{Content: "found it"}
		})
		tk := b.submit(t, "find app7")
		done := b.wait(t, tk.ID, task.StateCompleted)
		require.JSONEq(t, `{"text":"found it"}`, string(done.Result))
		reqs := b.llm.Requests()
		require.Len(t, reqs, 3)
		found, _ := toolMessage(reqs[2], "c2")
		require.Contains(t, found, `\"app\":\"app7\"`)
		require.Contains(t, found, `"more":false`)
	})
}
