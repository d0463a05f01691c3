package queue_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/event"
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
// noop (complete at once), inline (the same, run inside the claim),
// block (announce, then wait for the context), inline-block (the same,
// inside the claim).
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
		if mode == "block" || mode == "inline-block" {
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
	var handler queue.Handler = h
	if mode == "inline" || mode == "inline-block" {
		handler = inliner{h}
	}
	n := event.NewNotifier(st, nil)
	p := queue.New(st, map[task.Kind]queue.Handler{task.KindDeploy: handler}, nil, queue.Config{
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

// inliner runs every task inside its claim (queue.Inliner).
type inliner struct{ queue.HandlerFunc }

func (inliner) Inline(*task.Task) bool { return true }

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
func (b *testBundle) startPool(t *testing.T, h queue.Handler, cfg queue.Config, notify bool) *queue.Pool {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	p := queue.New(b.store, map[task.Kind]queue.Handler{task.KindDeploy: h}, nil, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if notify {
		n := event.NewNotifier(b.store, nil)
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
	require.NoError(t, b.store.TaskInsertMany(t.Context(), b.user.Memberships[0].TeamID, b.user.ID, task.KindDeploy, "noop", n))
	// One process leases its tasks, the other runs them inside the claim.
	_, _, stop1 := b.startChild(t, "noop")
	_, _, stop2 := b.startChild(t, "inline")
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

// TestKilledInsideItsClaimRunsAgainAtOnce: a worker killed while it runs a
// task inside the claim wrote nothing and held no lease; the task is
// claimable again as soon as the connection closes.
func TestKilledInsideItsClaimRunsAgainAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := testfactory.Task(t, b.store, b.user, nil)
	b.killWhenStarted(t, "inline-block", tk.ID, func() {
		got, err := b.store.TaskGet(t.Context(), b.user.TeamIDs(), tk.ID)
		require.NoError(t, err)
		require.Equal(t, task.StatePending, got.State, "a run inside its claim is not visible")
	})

	// A long lease and no rescuer: only the closed connection can free it.
	b.runPool(t, queue.HandlerFunc(complete), queue.Config{Workers: 2, Lease: time.Hour, RescueInterval: time.Hour, PollInterval: 50 * time.Millisecond})
	got := b.waitState(t, tk.ID, task.StateCompleted, 30*time.Second)
	require.Equal(t, 1, got.Attempt, "the killed run never started as far as the database knows")
	evs, err := b.store.EventList(t.Context(), b.user.TeamIDs(), tk.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 3, "submitted, claimed, completed: nothing of the killed run")
}

// TestInlineRunIsWrittenOnce: a task whose handler can run it inside the
// claim gets its claim event, its run's events and its outcome in one
// write, and keeps the leased path's event sequence.
func TestInlineRunIsWrittenOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var runs atomic.Int32
	h := inliner{func(ctx context.Context, j *queue.Job) queue.Outcome {
		runs.Add(1)
		j.Emit(task.Event{Type: task.EventStepStarted, Status: task.StatusToolCall, Step: 1, TotalStep: 1, StepName: "noop"})
		j.Emit(task.Event{Type: task.EventStepCompleted, Status: task.StatusToolResult, Step: 1, TotalStep: 1, StepName: "noop"})
		return queue.Outcome{State: task.StateCompleted, Result: []byte(`{"ok":true}`)}
	}}
	finished := make(chan string, 10)
	b.runPool(t, h, queue.Config{Workers: 4, PollInterval: 20 * time.Millisecond,
		OnFinish: func(t *task.Task, _ task.State) { finished <- t.ID }})
	tk := testfactory.Task(t, b.store, b.user, nil)
	select {
	case id := <-finished:
		require.Equal(t, tk.ID, id)
	case <-time.After(20 * time.Second):
		t.Fatal("the task never finished")
	}
	got, err := b.store.TaskGet(t.Context(), b.user.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateCompleted, got.State)
	require.Equal(t, 1, got.Attempt)
	require.Equal(t, 100, got.Progress.Percent)
	require.NotNil(t, got.StartedAt)
	require.NotNil(t, got.FinishedAt)
	require.False(t, got.FinishedAt.Before(*got.StartedAt))
	require.JSONEq(t, `{"ok":true}`, string(got.Result))
	evs := b.gapFreeEvents(t, tk.ID, noopEventTypes)
	require.Equal(t, "Picked up by a worker", evs[1].Message)
	var claim struct {
		State   task.State
		Attempt int
		Worker  string
	}
	require.NoError(t, json.Unmarshal(evs[1].Data, &claim))
	require.Equal(t, task.StateRunning, claim.State)
	require.Equal(t, 1, claim.Attempt)
	require.NotEmpty(t, claim.Worker)
	var batches int
	var leaseOwner *string
	require.NoError(t, b.store.Pool().QueryRow(t.Context(), `
		SELECT (SELECT count(*) FROM task_event_batches WHERE task_id = $1), (SELECT lease_owner FROM tasks WHERE id = $1)`,
		tk.ID).Scan(&batches, &leaseOwner))
	require.Equal(t, 2, batches, "the submit, then the claim with the whole run")
	require.Nil(t, leaseOwner)
	require.EqualValues(t, 1, runs.Load())
}

// TestInlineRunThatWritesIsRunAgainUnderALease: a run inside the claim that
// tries to write is discarded (nothing of it is stored) and the task is
// leased and run again.
func TestInlineRunThatWritesIsRunAgainUnderALease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var runs atomic.Int32
	h := inliner{func(ctx context.Context, j *queue.Job) queue.Outcome {
		n := runs.Add(1)
		j.Emit(task.Event{Type: task.EventStepLog, Status: task.StatusLog, Message: fmt.Sprintf("run %d", n)})
		if err := j.Flush(ctx); err != nil {
			require.ErrorIs(t, err, queue.ErrInlineWrite)
			require.EqualValues(t, 1, n, "only the run inside the claim is refused")
			return queue.Outcome{State: task.StateFailed, Error: "could not write"}
		}
		return queue.Outcome{State: task.StateCompleted}
	}}
	b.runPool(t, h, queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond})
	tk := testfactory.Task(t, b.store, b.user, nil)
	got := b.waitState(t, tk.ID, task.StateCompleted, 20*time.Second)
	require.Equal(t, 1, got.Attempt)
	require.EqualValues(t, 2, runs.Load())
	evs, err := b.store.EventList(t.Context(), b.user.TeamIDs(), tk.ID, 0, 0)
	require.NoError(t, err)
	var msgs []string
	for _, e := range evs {
		msgs = append(msgs, e.Message)
	}
	require.NotContains(t, msgs, "run 1", "the discarded run left nothing")
	require.Contains(t, msgs, "run 2")
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
	n := event.NewNotifier(b.store, nil)
	connected := make(chan struct{}, 10)
	got := make(chan string, 10)
	n.OnConnect(func() { connected <- struct{}{} })
	n.On(event.ChannelTaskCancel, func(p string) { got <- p })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go n.Run(ctx) //nolint:errcheck
	waitCh(t, connected)

	var dbName string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT current_database()`).Scan(&dbName))
	var killed int
	require.NoError(t, b.store.Pool().QueryRow(ctx, `
		SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND datname = $2`, store.ListenApplicationName, dbName).Scan(&killed))
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

// TestRequeuedTaskBehindTheWalkIsClaimed: a claimer walks the claim order
// from about where its last claim ended; a task handed back behind that
// point is claimed again at once (its requeue wake-up makes the next claim
// walk from the start), not after the poll interval (an hour here).
func TestRequeuedTaskBehindTheWalkIsClaimed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	old := testfactory.Task(t, b.store, b.user, nil)
	_, err := b.store.Pool().Exec(t.Context(), `UPDATE tasks SET created_at = now() - interval '1 hour' WHERE id = $1`, old.ID)
	require.NoError(t, err)
	var runs atomic.Int32
	release := make(chan struct{})
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		if j.Task.ID == old.ID && runs.Add(1) == 1 {
			<-release // hold it until the walk has moved past it
			return queue.Outcome{State: task.StatePending, Message: "handed back"}
		}
		return queue.Outcome{State: task.StateCompleted}
	})
	b.runPool(t, h, queue.Config{Workers: 4, PollInterval: time.Hour})
	newer := testfactory.Task(t, b.store, b.user, nil)
	b.waitState(t, newer.ID, task.StateCompleted, 20*time.Second)
	close(release)
	got := b.waitState(t, old.ID, task.StateCompleted, 20*time.Second)
	require.Equal(t, 1, got.Attempt)
	require.EqualValues(t, 2, runs.Load())
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

// someInline runs inside the claim every task but those of pipeline
// "block" (queue.Inliner).
type someInline struct{ queue.HandlerFunc }

func (someInline) Inline(t *task.Task) bool { return t.Pipeline != "block" }

// TestClaimsGrowButNeverPassATaskWithoutASlot: claims grow while their
// tasks run inside them, but a task that needs a slot when none is left
// stops the claim there: it and every later task stay pending until a slot
// frees, so tasks start in claim order.
func TestClaimsGrowButNeverPassATaskWithoutASlot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var want []string
	add := func(n int, pipeline string) {
		for range n {
			want = append(want, testfactory.Task(t, b.store, b.user, &testfactory.TaskOpts{Pipeline: pipeline}).ID)
		}
	}
	add(10, "noop")
	add(3, "block") // the first takes the only slot; the second finds none
	add(10, "noop")

	var mu sync.Mutex
	var order []string
	started, release := make(chan string, len(want)), make(chan struct{})
	h := someInline{func(ctx context.Context, j *queue.Job) queue.Outcome {
		mu.Lock()
		order = append(order, j.Task.ID)
		mu.Unlock()
		if j.Task.Pipeline == "block" {
			started <- j.Task.ID
			select {
			case <-release:
			case <-ctx.Done():
				return queue.Outcome{}
			}
		}
		return queue.Outcome{State: task.StateCompleted}
	}}
	b.runPool(t, h, queue.Config{Workers: 1, PollInterval: 20 * time.Millisecond})

	select {
	case id := <-started:
		require.Equal(t, want[10], id)
	case <-time.After(20 * time.Second):
		t.Fatal("the first blocking task never started")
	}
	// The pool now holds its only slot: it claims nothing until it frees.
	mu.Lock()
	require.Equal(t, want[:11], order, "every task before the first blocking one ran, nothing after it")
	mu.Unlock()
	for _, id := range want[11:] {
		tk, err := b.store.TaskGet(t.Context(), b.user.TeamIDs(), id)
		require.NoError(t, err)
		require.Equal(t, task.StatePending, tk.State)
		require.Nil(t, tk.StartedAt)
	}

	close(release)
	for _, id := range want {
		b.waitState(t, id, task.StateCompleted, 20*time.Second)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, want, order)
}

// TestClaimsGrowWhileTasksRunInside: on a backlog of tasks that run inside
// their claims, each claim takes twice as many as the last ran, up to
// InlineBatch, whatever the free slots (tasks finished by one claim share
// its transaction id).
func TestClaimsGrowWhileTasksRunInside(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const tasks, inlineBatch = 300, 100
	for range tasks {
		testfactory.Task(t, b.store, b.user, nil)
	}
	finished := make(chan struct{}, tasks)
	b.runPool(t, inliner{complete}, queue.Config{Workers: 2, InlineBatch: inlineBatch, PollInterval: 20 * time.Millisecond,
		OnFinish: func(*task.Task, task.State) { finished <- struct{}{} }})
	for range tasks {
		select {
		case <-finished:
		case <-time.After(20 * time.Second):
			t.Fatal("the backlog was never worked off")
		}
	}
	var claims, largest int
	require.NoError(t, b.store.Pool().QueryRow(t.Context(), `
		SELECT count(*), max(n) FROM (
			SELECT count(*) AS n FROM task_event_batches WHERE first_seq = 2 GROUP BY txid) claims`).Scan(&claims, &largest))
	require.LessOrEqual(t, largest, inlineBatch)
	require.GreaterOrEqual(t, largest, inlineBatch/2, "claims grew past the two free slots")
	require.Less(t, claims, 40, "hundreds of tasks in a few claims")
}
