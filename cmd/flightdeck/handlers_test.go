package main

import (
	"context"
	"flightdeck/internal/notify"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/llmtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

// TestAgentSettingsFromEnvironment runs agent tasks through the handlers
// serve wires, configured by FLIGHTDECK_AGENT_* and FLIGHTDECK_LLM_*.
func TestAgentSettingsFromEnvironment(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	llm := llmtest.New(t)
	llm.Fallback(func(r llmtest.Request) llmtest.Reply {
		if len(r.Messages) > 1 && r.Messages[1].Content == "fail" {
			return llmtest.Reply{Status: http.StatusBadGateway}
		}
		return llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "list_pipelines", Args: `{}`}}}
	})
	cfg, err := config.Load(func(k string) string {
		return map[string]string{
			"OPENAI_BASE_URL": llm.URL, "FLIGHTDECK_AGENT_MAX_ITERATIONS": "2",
			"FLIGHTDECK_LLM_RETRIES": "0", "FLIGHTDECK_LLM_TIMEOUT": "10s",
		}[k]
	})
	require.NoError(t, err)
	catalog, err := pipeline.NewCatalog(pipeline.Builtin()...)
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	p := queue.New(st, taskHandlers(cfg, st, catalog, logger, nil), queue.Config{
		Workers: 2, Lease: 2 * time.Second, PollInterval: 20 * time.Millisecond, Grace: 10 * time.Millisecond, Logger: logger})
	n := notify.NewListener(st, nil)
	p.Attach(n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(ctx) })
	wg.Go(func() { _ = p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	submit := func(prompt string) string {
		tk, _, err := st.TaskInsert(t.Context(), store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID,
			Kind: task.KindAgent, Prompt: prompt, Priority: task.PriorityNormal, MaxAttempts: 1})
		require.NoError(t, err)
		return tk.ID
	}
	waitFailed := func(id string) string {
		var reason string
		require.Eventually(t, func() bool {
			tk, err := st.TaskGet(context.Background(), u.TeamIDs(), id)
			if err != nil || tk.State != task.StateFailed || tk.Error == nil {
				return false
			}
			reason = *tk.Error
			return true
		}, 30*time.Second, 20*time.Millisecond)
		return reason
	}
	loop, fail := submit("loop"), submit("fail")
	require.Contains(t, waitFailed(loop), "iteration budget used up (2 model calls)")
	require.Contains(t, waitFailed(fail), "LLM call failed after 1 attempt(s)")
}
