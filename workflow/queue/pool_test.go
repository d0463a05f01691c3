package queue_test

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/notify"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

// Environment of a worker child process (this test binary run again).
const (
	envChild   = "FD_QUEUE_CHILD"
	envChildDB = "FD_QUEUE_CHILD_DB"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// runChild runs a worker pool until killed or its stdin closes. Modes:
// noop (complete at once), block (announce, then wait for the context).
func runChild(mode string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool, err := pgxpool.New(ctx, os.Getenv(envChildDB))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st := store.New(pool)
	var out sync.Mutex
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		if mode == "block" {
			out.Lock()
			fmt.Printf("started %s\n", j.Task.ID)
			out.Unlock()
			<-ctx.Done()
			if context.Cause(ctx) == queue.ErrCancelRequested {
				return queue.Outcome{State: task.StateCancelled, Message: "stopped by cancel"}
			}
			return queue.Outcome{}
		}
		return queue.Outcome{State: task.StateCompleted}
	})
	n := notify.NewListener(st, nil)
	p := queue.New(st, map[task.Kind]queue.Handler{task.KindDeploy: h}, queue.Config{
		Workers: 16, Lease: 2 * time.Second, PollInterval: 50 * time.Millisecond, Grace: time.Second,
	})
	p.Attach(n)
	go n.Run(ctx) //nolint:errcheck
	go func() {   // parent closes stdin to stop us gracefully
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		cancel()
	}()
	_ = p.Run(ctx)
	return 0
}

type testBundle struct {
	url   string
	store *store.Store
	user  *auth.User
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	url := dbtest.URL(t)
	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool)
	return &testBundle{url: url, store: st, user: testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)}
}

// startChild starts a worker process; the returned func stops it gracefully.
func (b *testBundle) startChild(t *testing.T, mode string) (*exec.Cmd, *bufio.Scanner, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+mode, envChildDB+"="+b.url)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	stop := func() { _ = stdin.Close(); _ = cmd.Wait() }
	t.Cleanup(func() { _ = cmd.Process.Kill(); stop() })
	return cmd, bufio.NewScanner(stdout), stop
}

// killWhenStarted starts a worker process in mode, waits until it says it
// started taskID, runs before (checks while it holds the task), then kills
// it with SIGKILL.
func (b *testBundle) killWhenStarted(t *testing.T, mode, taskID string, before ...func()) {
	t.Helper()
	child, out, _ := b.startChild(t, mode)
	require.True(t, out.Scan())
	require.Equal(t, "started "+taskID, out.Text())
	for _, f := range before {
		f()
	}
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_, _ = child.Process.Wait()
}

// noopEventTypes is the event sequence of a task whose handler emits a
// step's start and completion.
var noopEventTypes = []task.EventType{task.EventTaskState, task.EventTaskState, task.EventStepStarted, task.EventStepCompleted, task.EventTaskCompleted}

// gapFreeEvents reads a task's events, checks their seqs are 1..n and their
// types are want, and returns them.
func (b *testBundle) gapFreeEvents(t *testing.T, id string, want []task.EventType) []task.Event {
	t.Helper()
	evs, err := b.store.EventList(t.Context(), b.user.TeamIDs(), id, 0, 0)
	require.NoError(t, err)
	var types []task.EventType
	for i, e := range evs {
		require.Equal(t, i+1, e.Seq)
		types = append(types, e.Type)
	}
	require.Equal(t, want, types)
	return evs
}

// runPool runs an in-process pool until the test ends.
func (b *testBundle) runPool(t *testing.T, h queue.Handler, cfg queue.Config) *queue.Pool {
	t.Helper()
	return b.startPool(t, h, cfg, true)
}

// startPool runs a pool until the test ends, woken by NOTIFY when notify
// is set (otherwise only in-process and by its poll).
func (b *testBundle) startPool(t *testing.T, h queue.Handler, cfg queue.Config, listen bool) *queue.Pool {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	p := queue.New(b.store, map[task.Kind]queue.Handler{task.KindDeploy: h}, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if listen {
		n := notify.NewListener(b.store, nil)
		p.Attach(n)
		wg.Go(func() { _ = n.Run(ctx) })
	}
	wg.Go(func() { _ = p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return p
}

// waitState polls the task until it reaches want.
func (b *testBundle) waitState(t *testing.T, id string, want task.State, within time.Duration) *task.Task {
	t.Helper()
	var got *task.Task
	require.Eventually(t, func() bool {
		tk, err := b.store.TaskGet(context.Background(), b.user.TeamIDs(), id)
		got = tk
		return err == nil && tk.State == want
	}, within, 10*time.Millisecond, "task %s never reached %s", id, want)
	return got
}

func complete(context.Context, *queue.Job) queue.Outcome {
	return queue.Outcome{State: task.StateCompleted}
}

func TestPoolCompletesTasksWithGapFreeEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		j.Emit(task.Event{Type: task.EventStepStarted, Status: task.StatusToolCall, Step: 1, TotalStep: 1, StepName: "noop"})
		require.NoError(t, j.Flush(ctx))
		j.Emit(task.Event{Type: task.EventStepCompleted, Status: task.StatusToolResult, Step: 1, TotalStep: 1, StepName: "noop"})
		return queue.Outcome{State: task.StateCompleted}
	})
	b.runPool(t, h, queue.Config{Workers: 4, PollInterval: 20 * time.Millisecond})
	var ids []string
	for range 20 {
		ids = append(ids, testfactory.Task(t, b.store, b.user, nil).ID)
	}
	for _, id := range ids {
		tk := b.waitState(t, id, task.StateCompleted, 20*time.Second)
		require.Equal(t, 100, tk.Progress.Percent)
		b.gapFreeEvents(t, id, noopEventTypes)
	}
}

func TestTwoProcessesNeverDoubleClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 10000
	require.NoError(t, b.store.TaskInsertMany(t.Context(), b.user.Memberships[0].TeamID, b.user.ID, task.KindDeploy, "noop", n, nil))
	_, _, stop1 := b.startChild(t, "noop")
	_, _, stop2 := b.startChild(t, "noop")
	require.Eventually(t, func() bool {
		var done int
		err := b.store.Pool().QueryRow(t.Context(), `SELECT count(*) FROM tasks WHERE state = 'completed'`).Scan(&done)
		return err == nil && done == n
	}, 3*time.Minute, 100*time.Millisecond)
	stop1()
	stop2()
	var claims, tasks, workers int
	require.NoError(t, b.store.Pool().QueryRow(t.Context(), `
		SELECT count(*), count(DISTINCT task_id), count(DISTINCT data->>'worker') FROM task_events
		WHERE type = 'task.state' AND data->>'state' = 'running'`).Scan(&claims, &tasks, &workers))
	require.Equal(t, n, tasks)
	require.Equal(t, n, claims, "every task claimed exactly once")
	require.Equal(t, 2, workers, "both processes worked")
}

func TestKilledWorkerTaskIsCompletedByAnother(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := testfactory.Task(t, b.store, b.user, nil)
	b.killWhenStarted(t, "block", tk.ID)

	b.runPool(t, queue.HandlerFunc(complete), queue.Config{Workers: 2, Lease: 2 * time.Second, RescueInterval: 100 * time.Millisecond, PollInterval: 50 * time.Millisecond})
	got := b.waitState(t, tk.ID, task.StateCompleted, 30*time.Second)
	require.Equal(t, 2, got.Attempt, "started again after its worker died")
}

func TestCancelReachesTaskInAnotherProcess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := testfactory.Task(t, b.store, b.user, nil)
	_, out, _ := b.startChild(t, "block")
	require.True(t, out.Scan())
	start := time.Now()
	_, err := b.store.TaskCancel(t.Context(), b.user.TeamIDs(), tk.ID, "a@acme.test")
	require.NoError(t, err)
	b.waitState(t, tk.ID, task.StateCancelled, 20*time.Second)
	t.Logf("cancel reached the other process in %s", time.Since(start))
}

func TestGracefulStopHandsTasksBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := testfactory.Task(t, b.store, b.user, nil)
	_, out, stop := b.startChild(t, "block")
	require.True(t, out.Scan())
	stop() // grace 1s, then the blocked task is interrupted and released
	got := b.waitState(t, tk.ID, task.StatePending, 20*time.Second)
	require.Equal(t, 1, got.Attempt, "a clean hand-back is not a failed attempt")
}

func TestPanicIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls atomic.Int32
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		if calls.Add(1) == 1 {
			panic("boom")
		}
		return queue.Outcome{State: task.StateCompleted}
	})
	b.runPool(t, h, queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond})
	tk := testfactory.Task(t, b.store, b.user, nil)
	got := b.waitState(t, tk.ID, task.StateCompleted, 20*time.Second)
	require.Equal(t, 2, got.Attempt)
	require.EqualValues(t, 2, calls.Load())
}

func TestDeadlineFailsARunningTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		<-ctx.Done()
		if context.Cause(ctx) == queue.ErrDeadline {
			return queue.Outcome{State: task.StateFailed, Error: "deadline exceeded"}
		}
		return queue.Outcome{}
	})
	b.runPool(t, h, queue.Config{Workers: 1, Lease: 300 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	tk := testfactory.Task(t, b.store, b.user, &testfactory.TaskOpts{Deadline: 1})
	got := b.waitState(t, tk.ID, task.StateFailed, 20*time.Second)
	require.Equal(t, "deadline exceeded", *got.Error)
}

func TestListenRecoversFromTerminatedConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	n := notify.NewListener(b.store, nil)
	connected := make(chan struct{}, 10)
	got := make(chan string, 10)
	n.OnConnect(func() { connected <- struct{}{} })
	n.On(notify.TaskCancel, func(p string) { got <- p })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go n.Run(ctx) //nolint:errcheck
	waitCh(t, connected)

	var dbName string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT current_database()`).Scan(&dbName))
	var killed int
	require.NoError(t, b.store.Pool().QueryRow(ctx, `
		SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND datname = $2`, notify.ListenApplicationName, dbName).Scan(&killed))
	require.Equal(t, 1, killed)
	waitCh(t, connected) // reconnected

	_, err := b.store.Pool().Exec(ctx, `SELECT pg_notify('task_cancel', 'after-reconnect')`)
	require.NoError(t, err)
	select {
	case p := <-got:
		require.Equal(t, "after-reconnect", p)
	case <-time.After(20 * time.Second):
		t.Fatal("no notification after reconnecting")
	}
}

func waitCh(t *testing.T, c chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for a signal")
	}
}

// A wake-up that comes while a claim is on its way is kept when that claim
// comes back short: the claim's snapshot may be older than the task the
// wake-up is for. Here the claim waits, mid-statement, for a concurrency
// hold another transaction is inserting; a task submitted meanwhile wakes
// the pool during the claim, and with an hour's poll only that wake-up can
// get it claimed.
func TestWakeUpDuringAClaimIsKept(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	keyed := testfactory.Task(t, b.store, b.user, &testfactory.TaskOpts{ConcurrencyKey: "k", ConcurrencyPolicy: "queue"})
	other := testfactory.Task(t, b.store, b.user, nil)
	tx, err := b.store.Pool().Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.Background()) //nolint:errcheck
	_, err = tx.Exec(ctx, `INSERT INTO concurrency_holds (team_id, key, task_id) VALUES ($1, 'k', $2)`, keyed.TeamID, other.ID)
	require.NoError(t, err)

	// The keyed task's run holds its key to the end (its end would wake the
	// pool too); the others complete.
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		if j.Task.ID == keyed.ID {
			<-ctx.Done()
			return queue.Outcome{}
		}
		return queue.Outcome{State: task.StateCompleted}
	})
	b.startPool(t, h, queue.Config{Workers: 3, PollInterval: time.Hour, Grace: 10 * time.Millisecond}, false)
	require.Eventually(t, func() bool {
		var waiting bool
		err := b.store.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%candidates AS%')`).Scan(&waiting)
		return err == nil && waiting
	}, 20*time.Second, 5*time.Millisecond, "the claim waits for the hold")
	late := testfactory.Task(t, b.store, b.user, nil) // returns once the pool has its wake-up
	require.NoError(t, tx.Rollback(ctx))
	b.waitState(t, other.ID, task.StateCompleted, 20*time.Second)
	b.waitState(t, late.ID, task.StateCompleted, 20*time.Second)
}

// A pool is woken by the submits of its own process without a NOTIFY: here
// no notifier is attached and the poll interval is an hour, so each task
// after the first claim is found only through store.OnTaskReady.
func TestSubmitInTheSameProcessWakesThePool(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		return queue.Outcome{State: task.StateCompleted}
	})
	b.startPool(t, h, queue.Config{Workers: 2, PollInterval: time.Hour}, false)
	for range 3 {
		tk := testfactory.Task(t, b.store, b.user, nil)
		b.waitState(t, tk.ID, task.StateCompleted, 20*time.Second)
	}
}

// TestStoppingPoolStartsNothingNew: once its context ends a pool claims
// nothing more and its jobs see Draining at once, while a handler already
// running may finish within the grace period; what it leaves unfinished is
// handed back to pending at once, not a failed attempt.
func TestStoppingPoolStartsNothingNew(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan string, 10)
	finish := make(chan struct{})
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		started <- j.Task.ID
		select {
		case <-j.Draining():
		case <-time.After(20 * time.Second):
			return queue.Outcome{State: task.StateFailed, Error: "never drained"}
		}
		<-finish // the "step" in progress finishes after the signal
		j.Emit(task.Event{Type: task.EventStepCompleted, Status: task.StatusToolResult, Step: 1, TotalStep: 2, StepName: "first"})
		return queue.Outcome{} // hand back: the next step is not started here
	})
	cfg := queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond, Grace: time.Minute,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))}
	p := queue.New(b.store, map[task.Kind]queue.Handler{task.KindDeploy: h}, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = p.Run(ctx); close(stopped) }()
	tk := testfactory.Task(t, b.store, b.user, nil)
	require.Equal(t, tk.ID, <-started)
	cancel()
	other := testfactory.Task(t, b.store, b.user, nil) // submitted after the signal
	close(finish)
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("the pool did not stop")
	}
	select {
	case id := <-started:
		t.Fatalf("task %s started after the stop", id)
	default:
	}
	got, err := b.store.TaskGet(t.Context(), b.user.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StatePending, got.State, "handed back at once")
	require.Equal(t, 1, got.Attempt, "a clean hand-back is not a failed attempt")
	require.Equal(t, 1, got.Progress.Step, "the finished step's events were kept")
	got, err = b.store.TaskGet(t.Context(), b.user.TeamIDs(), other.ID)
	require.NoError(t, err)
	require.Equal(t, task.StatePending, got.State, "never claimed")
	require.Nil(t, got.StartedAt)
}

// TestClaimsTakeBatches: with a backlog, a claim takes as many tasks as
// there are free slots in one statement (the tasks a claim leased share
// its transaction id), and tasks start in claim order.
func TestClaimsTakeBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 300
	require.NoError(t, b.store.TaskInsertMany(t.Context(), b.user.Memberships[0].TeamID, b.user.ID, task.KindDeploy, "noop", n, nil))
	var order []string
	var mu sync.Mutex
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		mu.Lock()
		order = append(order, j.Task.ID)
		mu.Unlock()
		return queue.Outcome{State: task.StateCompleted}
	})
	b.runPool(t, h, queue.Config{Workers: 50, PollInterval: 20 * time.Millisecond})
	require.Eventually(t, func() bool {
		var done int
		err := b.store.Pool().QueryRow(t.Context(), `SELECT count(*) FROM tasks WHERE state = 'completed'`).Scan(&done)
		return err == nil && done == n
	}, time.Minute, 20*time.Millisecond)
	var claims, largest int
	// the tasks of one claim share its transaction's start time
	require.NoError(t, b.store.Pool().QueryRow(t.Context(), `
		SELECT count(*), max(c) FROM (SELECT started_at, count(*) AS c FROM tasks GROUP BY started_at) x`).Scan(&claims, &largest))
	require.Greater(t, largest, 1, "a claim took several tasks")
	require.LessOrEqual(t, largest, 50, "never more than the free slots")
	require.Less(t, claims, n/2)
	var want []string
	require.NoError(t, b.store.Pool().QueryRow(t.Context(), `
		SELECT array_agg(id ORDER BY priority, created_at, id) FROM tasks`).Scan(&want))
	mu.Lock()
	defer mu.Unlock()
	// Jobs of one claim start on goroutines of their own, so only claims
	// are ordered: each claim's tasks come after every earlier claim's.
	require.ElementsMatch(t, want, order)
}

// TestConcurrencyKeysHoldAcrossPools: three pools on one database, racing
// claims, tasks of four keys (and some without): no two tasks of a key ever
// run at once, each key's tasks run in claim order (priority, then age),
// and tasks without a key are never held back by them.
func TestConcurrencyKeysHoldAcrossPools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	running := map[string]int{}
	ran := map[string][]string{}
	violations := 0
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		var key string
		require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT COALESCE(concurrency_key, '') FROM tasks WHERE id = $1`, j.Task.ID).Scan(&key))
		mu.Lock()
		running[key]++
		if key != "" && running[key] > 1 {
			violations++
		}
		ran[key] = append(ran[key], j.Task.ID)
		mu.Unlock()
		// A write while holding the key widens the window for a second
		// holder, were there one.
		j.Emit(task.Event{Type: task.EventStepLog, Status: task.StatusLog, Message: "working"})
		if err := j.Flush(ctx); err != nil {
			return queue.Outcome{}
		}
		mu.Lock()
		running[key]--
		mu.Unlock()
		return queue.Outcome{State: task.StateCompleted}
	})
	want := map[string][]string{}
	var all []string
	for i := range 60 {
		key := ""
		if i%5 != 4 {
			key = fmt.Sprintf("app-%d", i%4)
		}
		prio := task.PriorityNormal
		if i%7 == 0 {
			prio = task.PriorityHigh
		}
		tk := testfactory.Task(t, b.store, b.user, &testfactory.TaskOpts{ConcurrencyKey: key, ConcurrencyPolicy: "queue", Priority: prio})
		all = append(all, tk.ID)
		if key != "" {
			want[key] = append(want[key], tk.ID)
		}
	}
	// Within a key, the claim order: priority, then age.
	for key, ids := range want {
		var tasks []*task.Task
		for _, id := range ids {
			got, err := b.store.TaskGet(t.Context(), b.user.TeamIDs(), id)
			require.NoError(t, err)
			tasks = append(tasks, got)
		}
		slices.SortFunc(tasks, func(x, y *task.Task) int {
			return cmp.Or(cmp.Compare(x.Priority, y.Priority), x.CreatedAt.Compare(y.CreatedAt), cmp.Compare(x.ID, y.ID))
		})
		want[key] = want[key][:0]
		for _, tk := range tasks {
			want[key] = append(want[key], tk.ID)
		}
	}
	for range 3 {
		b.startPool(t, h, queue.Config{Workers: 6, PollInterval: 10 * time.Millisecond}, true)
	}
	for _, id := range all {
		b.waitState(t, id, task.StateCompleted, time.Minute)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Zero(t, violations, "two tasks of one key ran at once")
	for key, ids := range want {
		require.Equal(t, ids, ran[key], "%s: one at a time, in claim order", key)
	}
	var holds int
	require.NoError(t, b.store.Pool().QueryRow(t.Context(), `SELECT count(*) FROM concurrency_holds`).Scan(&holds))
	require.Zero(t, holds, "every key was given up")
}

// TestOutcomeMustBeAReachableState: the pool writes only transitions the
// task vocabulary allows; a handler that reports success for a task it
// was compensating leaves it in needs_attention, never completed.
func TestOutcomeMustBeAReachableState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		j.SetState(task.StateCompensating)
		if err := j.Flush(ctx); err != nil {
			return queue.Outcome{}
		}
		return queue.Outcome{State: task.StateCompleted} // a bug
	})
	b.runPool(t, h, queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond})
	tk := testfactory.Task(t, b.store, b.user, nil)
	got := b.waitState(t, tk.ID, task.StateNeedsAttention, 20*time.Second)
	require.Contains(t, *got.Error, "a compensating task cannot become completed")
}
