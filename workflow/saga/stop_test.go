package saga_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

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

// startSagaPool runs a pool of the saga runner over rec's actions until
// the returned stop is called (or the test ends); stop returns once the
// pool has stopped. Its runs have no background flush: what they write is
// exactly what they must.
func startSagaPool(t *testing.T, st *store.Store, rec *recorder, id string, grace time.Duration, pipelines ...*pipeline.Pipeline) (stop func()) {
	t.Helper()
	catalog, err := pipeline.NewCatalog(pipelines...)
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := saga.NewRunner(saga.Config{Catalog: catalog, Logger: logger, RetryBase: time.Millisecond, FlushInterval: time.Hour,
		Actions: action.Registry{"test.do": rec.action("do"), "test.undo": rec.action("undo")}})
	p := queue.New(st, map[task.Kind]queue.Handler{task.KindDeploy: runner}, queue.Config{
		ID: id, Workers: 4, Lease: 2 * time.Second, PollInterval: 20 * time.Millisecond, RescueInterval: 50 * time.Millisecond,
		Grace: grace, Logger: logger,
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.Run(ctx) })
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// TestStopStartsNoNewStep is SIGTERM's contract: a stopping worker starts
// no step after the signal; the step it was running finishes within the
// grace period and is kept; the task goes back to pending at once, and
// another worker resumes it at the next step without running the first
// again.
func TestStopStartsNoNewStep(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	rec := newRecorder()
	rec.block["do:a"] = make(chan struct{})
	p := threeSteps("three")
	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	stop := startSagaPool(t, st, rec, "stopping", time.Minute, p)
	tk := testfactory.Task(t, st, u, &testfactory.TaskOpts{Pipeline: "three"})
	require.Equal(t, "do:a", <-rec.started)

	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }() // the signal
	// The pool is draining: let the running step finish now.
	require.Eventually(t, func() bool {
		var owner *string
		err := st.Pool().QueryRow(t.Context(), `SELECT lease_owner FROM tasks WHERE id = $1`, tk.ID).Scan(&owner)
		return err == nil && owner != nil
	}, 10*time.Second, 5*time.Millisecond)
	close(rec.block["do:a"])
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the pool did not stop")
	}
	select {
	case s := <-rec.started:
		t.Fatalf("%s started on the stopping worker", s)
	default:
	}
	got, err := st.TaskGet(t.Context(), u.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StatePending, got.State, "handed back at once, no lease to wait out")
	require.Equal(t, 1, got.Attempt)
	rows, err := st.StepList(t.Context(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, []task.StepState{task.StepCompleted, task.StepPending, task.StepPending}, []task.StepState{rows[0].State, rows[1].State, rows[2].State})

	startSagaPool(t, st, rec, "next", time.Minute, p)
	require.Eventually(t, func() bool {
		got, err = st.TaskGet(t.Context(), u.TeamIDs(), tk.ID)
		return err == nil && got.State == task.StateCompleted
	}, 30*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"do:a", "do:b", "do:c"}, rec.done(), "a ran once; the next worker went on at b")
	evs, err := st.EventList(t.Context(), u.TeamIDs(), tk.ID, 0, 0)
	require.NoError(t, err)
	var workers []string
	for i, e := range evs {
		require.Equal(t, i+1, e.Seq)
		if e.Type == task.EventStepStarted {
			workers = append(workers, e.StepName)
		}
	}
	require.Equal(t, []string{"a", "b", "c"}, workers)
}
