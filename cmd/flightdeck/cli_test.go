package main

import (
	"bytes"
	"context"
	"errors"
	"flightdeck/internal/notify"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/handlers"
	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/internal/dbtest"
	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
)

// TestSubmitWatch runs the CLI against a real server and worker pool.
func TestSubmitWatch(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	ctx := t.Context()
	_, err := st.UserAdd(ctx, store.UserAddParams{Email: "dev@acme.test", Team: "acme", Role: auth.RoleDeployer})
	require.NoError(t, err)
	token, hash := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, st.TokenCreate(ctx, "dev@acme.test", "cli", hash))

	cfg, err := config.Load(func(string) string { return "" })
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	catalog, err := pipeline.NewCatalog(pipeline.Builtin()...)
	require.NoError(t, err)
	n := notify.NewListener(st, logger)
	hub := notify.NewHub()
	hub.Attach(n)
	t.Cleanup(hub.Follow(st.Wakeups()))
	pool := queue.New(st, taskHandlers(cfg, st, catalog, logger, nil), queue.Config{Workers: 2, PollInterval: 20 * time.Millisecond, Logger: logger})
	pool.Attach(n)
	srv := httptest.NewServer(handlers.New(handlers.Deps{Config: cfg, Store: st, Logger: logger, Pipelines: catalog, Hub: hub}))
	bg, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(bg) })
	wg.Go(func() { _ = pool.Run(bg) })
	t.Cleanup(func() { srv.Close(); cancel(); wg.Wait() })

	getenv := func(k string) string {
		return map[string]string{"FLIGHTDECK_URL": srv.URL, "FLIGHTDECK_TOKEN": token}[k]
	}
	var out, errOut bytes.Buffer
	err = run(ctx, []string{"submit", "--pipeline", "noop", "--watch"}, getenv, &out, &errOut)
	require.NoError(t, err, errOut.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Regexp(t, `^[0-9a-f-]{36}$`, lines[0], "the task id alone on the first line")
	require.Contains(t, out.String(), "task.completed")
	require.Contains(t, out.String(), "1/1 steps, 100%")

	// watch replays a finished task too.
	var again bytes.Buffer
	require.NoError(t, run(ctx, []string{"watch", lines[0]}, getenv, &again, &errOut))
	require.Contains(t, again.String(), "task.completed")

	// A task that does not complete exits non-zero.
	err = run(ctx, []string{"submit", "--pipeline", "web-service", "--param", "app=shop", "--param", "version=0.0.0-broken", "--watch"}, getenv, &out, &errOut)
	require.True(t, errors.Is(err, errTaskNotCompleted), "got %v", err)

	// Bad input is reported with the contract's message.
	err = run(ctx, []string{"submit", "--pipeline", "web-service", "--param", "app=Bad App"}, getenv, &out, &errOut)
	require.ErrorContains(t, err, "params.app")
}
