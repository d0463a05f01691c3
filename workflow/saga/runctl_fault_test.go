package saga_test

import (
	"bufio"
	"context"
	"flightdeck/internal/notify"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/action"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// pausyPipeline's step two waits until the file "release" exists; every
// start is written to "started" with its idempotency key.
func pausyPipeline(dir string) *pipeline.Pipeline {
	s := func(name string) pipeline.Step {
		return pipeline.Step{Name: name, Action: "exec", Timeout: time.Minute, With: map[string]any{"command": []any{"./slow.sh"}}}
	}
	return &pipeline.Pipeline{Name: "pausy", Dir: dir, Steps: []pipeline.Step{s("one"), s("two"), s("three")}}
}

// runPool runs a pool of the saga runner over actions until the test ends.
func runPool(t *testing.T, st *store.Store, actions action.Registry, pipelines ...*pipeline.Pipeline) {
	t.Helper()
	catalog, err := pipeline.NewCatalog(pipelines...)
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	runner := saga.NewRunner(saga.Config{Catalog: catalog, Logger: logger, RetryBase: time.Millisecond, FlushInterval: 20 * time.Millisecond, Actions: actions})
	p := queue.New(st, map[task.Kind]queue.Handler{task.KindDeploy: runner}, queue.Config{
		Workers: 4, Lease: time.Second, PollInterval: 20 * time.Millisecond, RescueInterval: 50 * time.Millisecond, Logger: logger})
	n := notify.NewListener(st, logger)
	p.Attach(n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(ctx) })
	wg.Go(func() { _ = p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func waitFor(t *testing.T, st *store.Store, u *auth.User, id string, want task.State) *task.Task {
	t.Helper()
	var got *task.Task
	require.Eventually(t, func() bool {
		tk, err := st.TaskGet(context.Background(), u.TeamIDs(), id)
		got = tk
		return err == nil && tk.State == want
	}, 60*time.Second, 20*time.Millisecond, "task never reached %s", want)
	return got
}

// A worker process killed while a pause it was asked for waits on its
// step: the pause outlives it. The task is rescued, and the next worker
// parks it paused at once, before the interrupted step runs again; resumed,
// the step runs again under the same idempotency key.
func TestPauseSurvivesAKilledWorker(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	defer pool.Close()
	st := store.New(pool)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slow.sh"), []byte(`#!/bin/sh
echo "$FLIGHTDECK_STEP $FLIGHTDECK_IDEMPOTENCY_KEY" >> started
if [ "$FLIGHTDECK_STEP" = two ]; then
  while [ ! -f release ]; do sleep 0.05; done
fi
echo done
`), 0o755))
	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	in := store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Priority: task.PriorityNormal, MaxAttempts: 5}
	require.NoError(t, saga.NewDeploy(&in, pausyPipeline(dir), map[string]any{}, "acme"))
	tk, _, err := st.TaskInsert(t.Context(), in)
	require.NoError(t, err)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+url, envChildDir+"="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	require.True(t, bufio.NewScanner(out).Scan())
	var child sync.WaitGroup
	child.Go(func() { _ = cmd.Wait() })
	started := func() []string {
		b, _ := os.ReadFile(filepath.Join(dir, "started"))
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	// step two runs, and step one's end is stored (it rides with the run's
	// next write, or its background flush)
	require.Eventually(t, func() bool {
		rows, err := st.StepList(t.Context(), tk.ID)
		return len(started()) == 2 && err == nil && rows[0].State == task.StepCompleted
	}, 30*time.Second, 10*time.Millisecond, "step two runs")

	got, err := st.TaskPause(t.Context(), u.TeamIDs(), tk.ID, u.Email)
	require.NoError(t, err)
	require.True(t, got.PauseRequested)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	child.Wait()

	runPool(t, st, action.Registry{"exec": action.Exec{}}, pausyPipeline(dir))
	got = waitFor(t, st, u, tk.ID, task.StatePaused)
	require.Equal(t, 2, got.Attempt, "rescued once")
	rows, err := st.StepList(t.Context(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StepCompleted, rows[0].State)
	require.NotEqual(t, task.StepCompleted, rows[1].State, "two was interrupted, not finished")
	require.Len(t, started(), 2, "nothing ran after the pause")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "release"), nil, 0o644))
	_, err = st.TaskResume(t.Context(), store.TaskResumeParams{TeamIDs: u.TeamIDs(), ID: tk.ID, ActorID: u.ID, Actor: u.Email, ActorRole: "deployer"})
	require.NoError(t, err)
	waitFor(t, st, u, tk.ID, task.StateCompleted)
	runs := started()
	require.Len(t, runs, 4, "two ran again, then three")
	require.Equal(t, runs[1], runs[2], "two ran again under its key")
}

// A database restart while tasks are paused loses neither the pause nor
// the failed step's decision; the decision made after it goes through.
func TestPauseSurvivesADatabaseRestart(t *testing.T) {
	t.Parallel()
	c := dbtest.NewCluster(t)
	pool, err := store.Open(t.Context(), c.URL, 10)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool)
	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	rec := newRecorder()
	rec.fail["do:b"] = 1
	ask := asking("ask", time.Hour)
	runPool(t, st, action.Registry{"test.do": rec.action("do"), "test.undo": rec.action("undo")}, ask)
	in := store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Priority: task.PriorityNormal, MaxAttempts: 5}
	require.NoError(t, saga.NewDeploy(&in, ask, map[string]any{}, "acme"))
	tk, _, err := st.TaskInsert(t.Context(), in)
	require.NoError(t, err)
	before := waitFor(t, st, u, tk.ID, task.StatePaused)

	for _, mode := range []string{"fast", "immediate"} {
		c.Restart(t, mode)
		var after *task.Task
		require.Eventually(t, func() bool {
			after, err = st.TaskGet(t.Context(), u.TeamIDs(), tk.ID)
			return err == nil
		}, 30*time.Second, 50*time.Millisecond)
		require.Equal(t, task.StatePaused, after.State, mode)
		require.Equal(t, before.FailedStep, after.FailedStep)
		require.Equal(t, before.DecisionExpiresAt, after.DecisionExpiresAt)
	}
	require.Eventually(t, func() bool {
		_, err = st.TaskResume(t.Context(), store.TaskResumeParams{TeamIDs: u.TeamIDs(), ID: tk.ID, Action: task.ResumeRetry,
			ActorID: u.ID, Actor: u.Email, ActorRole: "deployer"})
		return err == nil
	}, 30*time.Second, 50*time.Millisecond)
	waitFor(t, st, u, tk.ID, task.StateCompleted)
	require.Equal(t, []string{"do:a", "do:b", "do:c"}, rec.done())
}

// SIGTERM while a retried step runs: the step is interrupted after the
// grace period, the task is handed back (not failed, not asked about
// again), and the next worker runs the step's next attempt under its key.
func TestStopDuringARetriedStep(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	rec := newRecorder()
	rec.fail["do:b"] = 1
	ask := asking("ask", time.Hour)
	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	stop := startSagaPool(t, st, rec, "first", 100*time.Millisecond, ask)
	in := store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Priority: task.PriorityNormal, MaxAttempts: 5}
	require.NoError(t, saga.NewDeploy(&in, ask, map[string]any{}, "acme"))
	tk, _, err := st.TaskInsert(t.Context(), in)
	require.NoError(t, err)
	waitFor(t, st, u, tk.ID, task.StatePaused)

	rec.mu.Lock()
	rec.block["do:b"] = make(chan struct{})
	rec.mu.Unlock()
	for len(rec.started) > 0 {
		<-rec.started
	}
	_, err = st.TaskResume(t.Context(), store.TaskResumeParams{TeamIDs: u.TeamIDs(), ID: tk.ID, Action: task.ResumeRetry,
		ActorID: u.ID, Actor: u.Email, ActorRole: "deployer"})
	require.NoError(t, err)
	require.Equal(t, "do:b", <-rec.started)
	stop() // SIGTERM: the grace passes while b still runs
	got, err := st.TaskGet(t.Context(), u.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StatePending, got.State, "handed back")
	require.Nil(t, got.FailedStep)

	close(rec.block["do:b"])
	startSagaPool(t, st, rec, "next", time.Minute, ask)
	waitFor(t, st, u, tk.ID, task.StateCompleted)
	require.Equal(t, []string{"do:a", "do:b", "do:c"}, rec.done())
	keys := rec.keys["do:b"]
	require.Len(t, keys, 3, "failed, interrupted, completed")
	require.Equal(t, keys[0], keys[1])
	require.Equal(t, keys[0], keys[2])
	rows, err := st.StepList(t.Context(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, 3, rows[1].Attempt)
}
