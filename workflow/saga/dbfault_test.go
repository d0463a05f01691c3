package saga_test

import (
	"context"
	"encoding/json"
	"flightdeck/internal/notify"
	"fmt"
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

// world is an outside world whose actions honour idempotency keys, as the
// built-in ones do: the effect of a key lands once however often it runs.
// Step b of every task waits at a gate, so the database fault can be made
// to fall while every task is in the middle of its run.
type world struct {
	mu      sync.Mutex
	effects map[string]int      // idempotency key → effects landed
	keys    map[string][]string // task/step → distinct keys seen
	runs    int
	atGate  chan string
	gate    chan struct{}
}

func (w *world) action() action.Action {
	return action.Func(func(ctx context.Context, in action.Input) (json.RawMessage, error) {
		if in.Step == "b" {
			w.atGate <- in.TaskID
			select {
			case <-w.gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.runs++
		k := in.TaskID + "/" + in.Step
		seen := false
		for _, key := range w.keys[k] {
			seen = seen || key == in.IdempotencyKey
		}
		if !seen {
			w.keys[k] = append(w.keys[k], in.IdempotencyKey)
		}
		if w.effects[in.IdempotencyKey] == 0 {
			w.effects[in.IdempotencyKey]++
		}
		return json.RawMessage(`{}`), nil
	})
}

// TestDatabaseFaultsAreNeverATasksFailure: the database restarted (fast:
// every session gets 57P01; immediate: a crash and recovery) or a worker's
// connections terminated while 3-step tasks run. Every accepted task ends
// completed, each step ran under one idempotency key (so its effect landed
// once), and no task's error mentions the database.
func TestDatabaseFaultsAreNeverATasksFailure(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"restart-fast", "restart-immediate", "terminate-backends"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			c := dbtest.NewCluster(t)
			pool, err := store.Open(t.Context(), c.URL, 20)
			require.NoError(t, err)
			t.Cleanup(pool.Close)
			st := store.New(pool)
			u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
			w := &world{effects: map[string]int{}, keys: map[string][]string{}, atGate: make(chan string, 100), gate: make(chan struct{})}
			p := &pipeline.Pipeline{Name: "three", Steps: []pipeline.Step{
				{Name: "a", Action: "test.world"}, {Name: "b", Action: "test.world"}, {Name: "c", Action: "test.world"}}}
			catalog, err := pipeline.NewCatalog(p)
			require.NoError(t, err)
			logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
			runner := saga.NewRunner(saga.Config{Catalog: catalog, Logger: logger, RetryBase: time.Millisecond,
				FlushInterval: 20 * time.Millisecond, Actions: action.Registry{"test.world": w.action()}})
			qp := queue.New(st, map[task.Kind]queue.Handler{task.KindDeploy: runner}, queue.Config{
				Workers: 16, Lease: 3 * time.Second, PollInterval: 50 * time.Millisecond, RescueInterval: 200 * time.Millisecond, Logger: logger})
			n := notify.NewListener(st, logger)
			qp.Attach(n)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { _ = n.Run(ctx) })
			wg.Go(func() { _ = qp.Run(ctx) })
			t.Cleanup(func() { cancel(); wg.Wait() })

			const tasks = 12
			var ids []string
			for range tasks {
				ids = append(ids, testfactory.Task(t, st, u, &testfactory.TaskOpts{Pipeline: "three"}).ID)
			}
			for range tasks {
				select {
				case <-w.atGate:
				case <-time.After(30 * time.Second):
					t.Fatal("the tasks never reached step b")
				}
			}
			switch fault {
			case "restart-fast":
				go close(w.gate) // the steps' ends and the next starts are written while the server restarts
				c.Restart(t, "fast")
			case "restart-immediate":
				go close(w.gate)
				c.Restart(t, "immediate")
			case "terminate-backends":
				close(w.gate)
				admin, err := store.Open(t.Context(), c.URL, 1)
				require.NoError(t, err)
				defer admin.Close()
				_, err = admin.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
					WHERE datname = current_database() AND pid <> pg_backend_pid()`)
				require.NoError(t, err)
			}

			// Resumed runs pass the gate again at once (it is closed).
			require.Eventually(t, func() bool {
				var done int
				err := pool.QueryRow(t.Context(), `SELECT count(*) FROM tasks WHERE state IN ('completed', 'failed', 'cancelled', 'needs_attention')`).Scan(&done)
				return err == nil && done == tasks
			}, 90*time.Second, 50*time.Millisecond, "every task ends")
			for _, id := range ids {
				got, err := st.TaskGet(t.Context(), u.TeamIDs(), id)
				require.NoError(t, err)
				require.Equal(t, task.StateCompleted, got.State, "task %s: %v", id, got.Error)
				for _, s := range []string{"a", "b", "c"} {
					w.mu.Lock()
					keys := w.keys[id+"/"+s]
					w.mu.Unlock()
					require.Len(t, keys, 1, fmt.Sprintf("step %s of %s ran under one key", s, id))
				}
			}
			w.mu.Lock()
			require.Len(t, w.effects, 3*tasks, "each step's effect once")
			t.Logf("%s: %d action runs for %d steps", fault, w.runs, 3*tasks)
			w.mu.Unlock()
		})
	}
}
