package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// foldAll folds until the rollup cursor has passed every batch of the
// outbox (a fold reads only below the cluster's xmin, which other tests'
// transactions hold back for a moment; another folder may hold the cursor).
func foldAll(t *testing.T, st *store.Store) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := st.RollupFoldOnce(t.Context(), 7) // small batches: the cursor stops inside batches too
		require.NoError(t, err)
		n, err := st.RollupBehind(t.Context())
		require.NoError(t, err)
		if n == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "the fold is %d batches behind", n)
	}
}

// figures are what the dashboard reads of a team: its rollups (run times,
// outcomes, time to restore) and per-minute counts.
type figures struct {
	rollups []store.Rollup
	minutes any
}

func teamFigures(t *testing.T, st *store.Store, u *auth.User) figures {
	t.Helper()
	since := time.Now().Add(-48 * time.Hour)
	r, err := st.TaskRollupList(t.Context(), u.TeamIDs(), since, since)
	require.NoError(t, err)
	slices.SortFunc(r, compareRollups)
	m, err := st.TaskThroughput(t.Context(), u.TeamIDs(), since)
	require.NoError(t, err)
	return figures{r, m}
}

// endSome ends n tasks of u's team, a mix of outcomes, deploys to two
// targets among them (so time to restore moves), in workers' batches.
func endSome(t *testing.T, st *store.Store, u *auth.User, n, seed int) {
	t.Helper()
	var ids []string
	for i := range n {
		pl := []string{"web-service", "canary", "health-check"}[(i+seed)%3]
		tk := testfactory.Task(t, st, u, &testfactory.TaskOpts{Pipeline: pl})
		ids = append(ids, tk.ID)
	}
	claimed, err := st.TaskClaim(t.Context(), "w", 100, time.Minute)
	require.NoError(t, err)
	outcomes := []task.State{task.StateCompleted, task.StateFailed, task.StateCompleted, task.StateCancelled}
	var ws []store.TaskWrite
	for i, c := range claimed {
		s := outcomes[(i+seed)%len(outcomes)]
		typ, status := task.TerminalEvent(s)
		ws = append(ws, store.TaskWrite{ID: c.Task.ID, Token: c.Task.LeaseToken, State: s, Release: true,
			Events: []task.Event{{Type: task.EventStepLog, Status: task.StatusLog, Message: "step"}, {Type: typ, Status: status, Message: string(s)}}})
	}
	written, err := st.TaskWrites(t.Context(), ws)
	require.NoError(t, err)
	require.Len(t, written, len(ids))
}

// TestRollupFoldCutOffIsRedone cuts the fold off between its writes and
// its commit, three ways (its statement fails, its context is cancelled,
// its backend is terminated): each time nothing of it stays, and the next
// folds count every task once, exactly what a rebuild from the finished
// tasks makes.
func TestRollupFoldCutOffIsRedone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.DB(t)
	st := store.New(pool)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	none := teamFigures(t, st, u)
	require.Empty(t, none.rollups)

	kills := map[string]func(context.Context, *pgxpool.Pool) func(context.Context) error{
		"error": func(context.Context, *pgxpool.Pool) func(context.Context) error {
			return func(context.Context) error { return errors.New("cut off") }
		},
		"cancel": func(ctx context.Context, _ *pgxpool.Pool) func(context.Context) error {
			return func(context.Context) error {
				cancel := ctx.Value(cancelKey{}).(context.CancelFunc)
				cancel()
				return nil
			}
		},
		"terminate": func(_ context.Context, pool *pgxpool.Pool) func(context.Context) error {
			return func(ctx context.Context) error {
				// the fold's own session, killed from another one
				_, err := pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
					WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle in transaction'`)
				return err
			}
		},
	}
	seed := 0
	for _, name := range []string{"error", "cancel", "terminate"} {
		seed++
		endSome(t, st, u, 9, seed)
		before := teamFigures(t, st, u)
		fctx, cancel := context.WithCancel(ctx)
		fctx = context.WithValue(fctx, cancelKey{}, cancel)
		var hooked bool
		for !hooked {
			// the first folds may find the new batches still above xmin
			kill := kills[name](fctx, pool)
			_, err := st.RollupFoldHook(fctx, 1000, func(ctx context.Context) error {
				hooked = true
				return kill(ctx)
			})
			if hooked {
				require.Error(t, err, name)
			} else {
				require.NoError(t, err)
			}
		}
		cancel()
		require.Equal(t, before, teamFigures(t, st, u), "%s: a fold cut off leaves nothing", name)
		foldAll(t, st)
	}
	folded := teamFigures(t, st, u)
	require.NotEmpty(t, folded.rollups)
	require.NoError(t, st.RollupRebuild(ctx, u.Memberships[0].TeamID))
	require.Equal(t, teamFigures(t, st, u), folded, "the folds count each task once")
}

type cancelKey struct{}

// TestRollupFoldersFoldOnce: several processes fold at once (each a store
// over its own pool, as serve processes are); the cursor row elects one at
// a time, so every task is counted once, as a rebuild counts them.
func TestRollupFoldersFoldOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.DB(t)
	st := store.New(pool)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		other := store.New(pool)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := other.RollupFoldOnce(ctx, 5)
				if err != nil && ctx.Err() == nil {
					t.Errorf("fold: %v", err)
					return
				}
			}
		})
	}
	for round := range 4 {
		endSome(t, st, u, 10, round)
	}
	close(stop)
	wg.Wait()
	foldAll(t, st)
	folded := teamFigures(t, st, u)
	require.NoError(t, st.RollupRebuild(ctx, u.Memberships[0].TeamID))
	require.Equal(t, teamFigures(t, st, u), folded)
}

// TestRollupRebuildBesideALaggingFold: a rebuild leaves the tasks the fold
// has not reached to the fold, so the two together count each task once.
func TestRollupRebuildBesideALaggingFold(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := store.New(dbtest.DB(t))
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	endSome(t, st, u, 8, 1)
	foldAll(t, st)
	endSome(t, st, u, 8, 2)
	require.NoError(t, st.RollupRebuild(ctx, u.Memberships[0].TeamID)) // the second eight are not folded yet
	foldAll(t, st)
	folded := teamFigures(t, st, u)
	require.NoError(t, st.RollupRebuild(ctx, u.Memberships[0].TeamID))
	require.Equal(t, teamFigures(t, st, u), folded)
}

// TestRollupFoldReadsOnlyEndingBatches: the fold walks the batches of the
// writes that ended tasks, not every write's (migration 00082): three
// tasks with steps in between are three rows read, and their figures are
// counted once.
func TestRollupFoldReadsOnlyEndingBatches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	for range 3 {
		testfactory.Task(t, st, u, &testfactory.TaskOpts{Pipeline: "web-service"})
	}
	claimed, err := st.TaskClaim(ctx, "w", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	step := func(c store.Claimed, last bool) store.TaskWrite {
		w := store.TaskWrite{ID: c.Task.ID, Token: c.Task.LeaseToken,
			Events: []task.Event{{Type: task.EventStepLog, Status: task.StatusLog, Message: "step"}}}
		if last {
			w.State, w.Release = task.StateCompleted, true
			typ, status := task.TerminalEvent(task.StateCompleted)
			w.Events = append(w.Events, task.Event{Type: typ, Status: status, Message: "done"})
		}
		return w
	}
	for _, last := range []bool{false, false, true} {
		var ws []store.TaskWrite
		for _, c := range claimed {
			ws = append(ws, step(c, last))
		}
		_, err := st.TaskWrites(ctx, ws)
		require.NoError(t, err)
	}
	var read, counted int
	deadline := time.Now().Add(30 * time.Second)
	for counted < 3 {
		r, err := st.RollupFoldOnce(ctx, 1000)
		require.NoError(t, err)
		read, counted = read+r.Scanned, counted+r.Tasks
		require.True(t, time.Now().Before(deadline), "the fold counted %d of 3", counted)
	}
	require.Equal(t, 3, read, "only the ending batches are read")
	require.Equal(t, 3, counted)
}
