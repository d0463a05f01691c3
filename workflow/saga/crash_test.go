package saga_test

import (
	"bufio"
	"cmp"
	"context"
	"flightdeck/internal/notify"
	"math/rand/v2"
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

const (
	envChild    = "FD_SAGA_CHILD_DB"
	envChildDir = "FD_SAGA_CHILD_DIR"
	// envChildFlush sets the child's background flush interval.
	envChildFlush = "FD_SAGA_CHILD_FLUSH"
	// envChildLease sets the child's lease (default 1s).
	envChildLease = "FD_SAGA_CHILD_LEASE"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(envChild); url != "" {
		runChild(url, os.Getenv(envChildDir))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashPipeline runs the ledger script three times; the script honours the
// idempotency key the way the docs ask exec scripts to.
func crashPipeline(dir string) *pipeline.Pipeline {
	s := func(name string) pipeline.Step {
		return pipeline.Step{Name: name, Action: "exec", Retries: 1, Timeout: time.Minute,
			With: map[string]any{"command": []any{"./effect.sh"}}}
	}
	return &pipeline.Pipeline{Name: "crashy", Dir: dir, Steps: []pipeline.Step{s("one"), s("two"), s("three")}}
}

// runChild is a worker process that works until it is killed.
func runChild(url, dir string) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		os.Exit(1)
	}
	st := store.New(pool)
	catalog, _ := pipeline.NewCatalog(crashPipeline(dir), pausyPipeline(dir), gatedPipeline(dir))
	flush, _ := time.ParseDuration(os.Getenv(envChildFlush))
	runner := saga.NewRunner(saga.Config{Catalog: catalog, Actions: action.Registry{"exec": action.Exec{}}, RetryBase: time.Millisecond, FlushInterval: flush})
	n := notify.NewListener(st, nil)
	lease, _ := time.ParseDuration(os.Getenv(envChildLease))
	p := queue.New(st, map[task.Kind]queue.Handler{task.KindDeploy: runner}, queue.Config{
		Workers: 8, Lease: cmp.Or(lease, time.Second), PollInterval: 20 * time.Millisecond, RescueInterval: 100 * time.Millisecond})
	p.Attach(n)
	go n.Run(ctx) //nolint:errcheck
	ready := bufio.NewWriter(os.Stdout)
	ready.WriteString("ready\n")
	ready.Flush()
	_ = p.Run(ctx)
}

// TestSIGKILLAtRandomPoints kills the worker process over and over while 50
// sagas run. Every saga must end completed, and every step's side effect
// must have happened exactly once (the ledger holds each key once), though
// interrupted steps ran again.
func TestSIGKILLAtRandomPoints(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	defer pool.Close()
	st := store.New(pool)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "effect.sh"), []byte(`#!/bin/sh
echo "$FLIGHTDECK_IDEMPOTENCY_KEY" >> attempts
sleep 0.$(( $(od -An -N1 -tu1 /dev/urandom) % 3 ))
( flock 9
  grep -qx "$FLIGHTDECK_IDEMPOTENCY_KEY" ledger 2>/dev/null || echo "$FLIGHTDECK_IDEMPOTENCY_KEY" >> ledger
) 9>ledger.lock
echo done
`), 0o755))
	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	const runs = 50
	var ids []string
	// Submitted as every submit does: the step rows and keys stored with
	// the task (saga.NewDeploy).
	crashy := crashPipeline(dir)
	for range runs {
		in := store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Priority: task.PriorityNormal, MaxAttempts: 100}
		require.NoError(t, saga.NewDeploy(&in, crashy, map[string]any{}, "acme"))
		tk, _, err := st.TaskInsert(t.Context(), in)
		require.NoError(t, err)
		ids = append(ids, tk.ID)
	}

	allDone := func() bool {
		var n int
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM tasks WHERE state = 'completed'`).Scan(&n))
		return n == runs
	}
	kills := 0
	deadline := time.Now().Add(3 * time.Minute)
	for !allDone() {
		require.True(t, time.Now().Before(deadline), "sagas did not finish")
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"="+url, envChildDir+"="+dir)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		sc := bufio.NewScanner(out)
		require.True(t, sc.Scan())
		var wg sync.WaitGroup
		wg.Go(func() { _ = cmd.Wait() })
		if kills < 12 {
			// Let it work a random while, then kill it mid-whatever.
			<-time.After(time.Duration(100+rand.IntN(900)) * time.Millisecond)
			_ = cmd.Process.Signal(syscall.SIGKILL)
			kills++
		} else {
			require.Eventually(t, allDone, 2*time.Minute, 50*time.Millisecond)
			_ = cmd.Process.Signal(syscall.SIGKILL)
		}
		wg.Wait()
	}

	ledger, err := os.ReadFile(filepath.Join(dir, "ledger"))
	require.NoError(t, err)
	attempts, err := os.ReadFile(filepath.Join(dir, "attempts"))
	require.NoError(t, err)
	keys := strings.Fields(string(ledger))
	seen := map[string]bool{}
	for _, k := range keys {
		require.False(t, seen[k], "effect of %s happened twice", k)
		seen[k] = true
	}
	require.Len(t, keys, 3*runs, "each step's effect happened")
	var stepKeys int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(DISTINCT idempotency_key) FROM task_steps WHERE state = 'completed'`).Scan(&stepKeys))
	require.Equal(t, 3*runs, stepKeys)
	t.Logf("%d kills; %d step runs for %d steps (re-runs used the same key)", kills, len(strings.Fields(string(attempts))), 3*runs)
	for _, id := range ids {
		evs, err := st.EventList(context.Background(), u.TeamIDs(), id, 0, 0)
		require.NoError(t, err)
		for i, e := range evs {
			require.Equal(t, i+1, e.Seq)
		}
		require.Equal(t, task.EventTaskCompleted, evs[len(evs)-1].Type)
	}
}
