package saga_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// gatedPipeline's second step waits for a file named gate in dir; every
// step writes its name to runs as its action starts.
func gatedPipeline(dir string) *pipeline.Pipeline {
	s := func(name string) pipeline.Step {
		return pipeline.Step{Name: name, Action: "exec", Timeout: time.Minute, With: map[string]any{"command": []any{"./gated.sh"}}}
	}
	return &pipeline.Pipeline{Name: "gated", Dir: dir, Steps: []pipeline.Step{s("one"), s("two"), s("three")}}
}

// startChild starts a worker process over url (runChild) and returns once
// it is ready; kill ends it with SIGKILL and waits for it.
func startChild(t testing.TB, url, dir string, env ...string) (kill func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), envChild+"="+url, envChildDir+"="+dir), env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	require.True(t, bufio.NewScanner(out).Scan(), "the worker process did not start")
	var wg sync.WaitGroup
	wg.Go(func() { _ = cmd.Wait() })
	var once sync.Once
	kill = func() { once.Do(func() { _ = cmd.Process.Signal(syscall.SIGKILL); wg.Wait() }) }
	t.Cleanup(kill)
	return kill
}

// TestKilledDuringStepTwoNeverRerunsStepOne: the moment step 2's action
// starts, step 1's completion is already stored (contract §2 "Resuming"),
// so a worker killed while step 2 runs leaves a task that resumes at step
// 2: step 1 ran once. The worker's background flush is turned off (an hour),
// so only the rule itself can store step 1 in time.
func TestKilledDuringStepTwoNeverRerunsStepOne(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	defer pool.Close()
	st := store.New(pool)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gated.sh"), []byte(`#!/bin/sh
echo "$FLIGHTDECK_STEP" >> runs
if [ "$FLIGHTDECK_STEP" = two ]; then
  while [ ! -f gate ]; do sleep 0.02; done
fi
`), 0o755))
	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	in := store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Priority: task.PriorityNormal, MaxAttempts: 5}
	require.NoError(t, saga.NewDeploy(&in, gatedPipeline(dir), map[string]any{}, "acme"))
	tk, _, err := st.TaskInsert(t.Context(), in)
	require.NoError(t, err)

	runs := func() []string {
		b, _ := os.ReadFile(filepath.Join(dir, "runs"))
		return strings.Fields(string(b))
	}
	kill := startChild(t, url, dir, envChildFlush+"=1h")
	require.Eventually(t, func() bool { return len(runs()) >= 2 }, time.Minute, 5*time.Millisecond, "step two never started")
	require.Equal(t, []string{"one", "two"}, runs())

	// Step two's action runs now: step one must be stored as completed.
	steps, err := st.StepList(t.Context(), tk.ID)
	require.NoError(t, err)
	require.Len(t, steps, 3)
	require.Equal(t, task.StepCompleted, steps[0].State, "step one's completion was not stored before step two started")
	require.Contains(t, []task.StepState{task.StepPending, task.StepRunning}, steps[1].State)
	evs, err := st.EventList(t.Context(), u.TeamIDs(), tk.ID, 0, 0)
	require.NoError(t, err)
	var types []task.EventType
	for _, e := range evs {
		types = append(types, e.Type)
	}
	require.Contains(t, types, task.EventStepCompleted)

	kill()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644))
	startChild(t, url, dir)
	require.Eventually(t, func() bool {
		got, err := st.TaskGet(t.Context(), u.TeamIDs(), tk.ID)
		return err == nil && got.State == task.StateCompleted
	}, time.Minute, 20*time.Millisecond, "the task did not complete after the kill")
	require.Equal(t, []string{"one", "two", "two", "three"}, runs(), "step one ran again")
}

// TestDeadWorkerIsFoundInSeconds: a worker process killed while its task
// runs is noticed by its database session ending (its liveness lock), not
// by its lease: with leases of a minute, another worker starts the
// interrupted step again within seconds (quality.md: within 2 s; the test
// allows 20 s on a loaded machine, still far below the lease).
func TestDeadWorkerIsFoundInSeconds(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	defer pool.Close()
	st := store.New(pool)
	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	took := killWhileRunning(t, st, u, url, 20*time.Second)
	t.Logf("SIGKILL to the step started again: %s", took.Round(time.Millisecond))
}

// BenchmarkDeadWorkerFound measures, per SIGKILL of a worker process while
// its task's step runs, the time until another worker process (leases of a
// minute) starts that step again: run with -benchtime=20x and read the
// p50 and p99 it reports.
func BenchmarkDeadWorkerFound(b *testing.B) {
	url := dbtest.URL(b)
	pool, err := pgxpool.New(b.Context(), url)
	require.NoError(b, err)
	defer pool.Close()
	st := store.New(pool)
	u := testfactory.User(b, st, "dev@acme.test", "acme", auth.RoleDeployer)
	var took []time.Duration
	for b.Loop() {
		took = append(took, killWhileRunning(b, st, u, url, time.Minute))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(took[(len(took)-1)*99/100].Milliseconds()), "p99-ms")
}

// killWhileRunning runs a gated task on a worker process, kills that
// process with SIGKILL while step two runs, and returns how long it took
// until a second worker process started step two again; then lets the
// task complete and checks that step one ran once.
func killWhileRunning(t testing.TB, st *store.Store, u *auth.User, url string, within time.Duration) time.Duration {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gated.sh"), []byte(`#!/bin/sh
echo "$FLIGHTDECK_STEP" >> runs
if [ "$FLIGHTDECK_STEP" = two ]; then
  while [ ! -f gate ]; do sleep 0.02; done
fi
`), 0o755))
	in := store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Priority: task.PriorityNormal, MaxAttempts: 5}
	require.NoError(t, saga.NewDeploy(&in, gatedPipeline(dir), map[string]any{}, "acme"))
	tk, _, err := st.TaskInsert(context.Background(), in)
	require.NoError(t, err)
	runs := func() []string {
		b, _ := os.ReadFile(filepath.Join(dir, "runs"))
		return strings.Fields(string(b))
	}

	kill := startChild(t, url, dir, envChildLease+"=1m")
	require.Eventually(t, func() bool { return len(runs()) >= 2 }, time.Minute, 5*time.Millisecond, "step two never started")
	// The survivor, with the same long lease.
	survivor := startChild(t, url, dir, envChildLease+"=1m")
	kill()
	killed := time.Now()
	require.Eventually(t, func() bool { return len(runs()) >= 3 }, within, 2*time.Millisecond,
		"the dead worker's task was not picked up before its lease")
	took := time.Since(killed)
	require.Equal(t, []string{"one", "two", "two"}, runs())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644))
	var got *task.Task
	require.Eventually(t, func() bool {
		got, err = st.TaskGet(context.Background(), u.TeamIDs(), tk.ID)
		return err == nil && got.State == task.StateCompleted
	}, time.Minute, 20*time.Millisecond)
	// At least the lost run counts. A process killed with a claim on its
	// way may still have its backend take a task after it died; that one
	// is found dead at once too, and counts as well.
	require.GreaterOrEqual(t, got.Attempt, 2, "the lost run counts as an attempt")
	require.Equal(t, []string{"one", "two", "two", "three"}, runs(), "step one ran once")
	survivor()
	return took
}
