package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

func TestTaskInsert(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	params := func(key string, hash string) store.TaskInsertParams {
		return store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Kind: task.KindDeploy,
			Pipeline: "noop", Priority: task.PriorityNormal, IdempotencyKey: key, RequestHash: []byte(hash), MaxPending: 3}
	}

	t.Run("FirstEventIsCommittedWithTheTask", func(t *testing.T) {
		tk, created, err := st.TaskInsert(ctx, params("", "x"))
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, task.StatePending, tk.State)
		evs, err := st.EventList(ctx, u.TeamIDs(), tk.ID, 0, 0)
		require.NoError(t, err)
		require.Len(t, evs, 1)
		require.Equal(t, 1, evs[0].Seq)
		require.Equal(t, task.EventTaskState, evs[0].Type)
	})

	t.Run("IdempotencyKey", func(t *testing.T) {
		a, created, err := st.TaskInsert(ctx, params("k1", "body-1"))
		require.NoError(t, err)
		require.True(t, created)
		b, created, err := st.TaskInsert(ctx, params("k1", "body-1"))
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, a.ID, b.ID)
		_, _, err = st.TaskInsert(ctx, params("k1", "body-2"))
		require.ErrorIs(t, err, store.ErrIdempotencyConflict)
	})

	t.Run("QueueBound", func(t *testing.T) {
		// Three pending tasks exist by now (two above plus this one).
		_, _, err := st.TaskInsert(ctx, params("", "y"))
		require.NoError(t, err)
		_, _, err = st.TaskInsert(ctx, params("", "z"))
		require.ErrorIs(t, err, store.ErrQueueFull)
		_, _, err = st.TaskInsert(ctx, params("k1", "body-1"))
		require.NoError(t, err, "a replay is not a new task")
	})
}

func TestIdempotencyRace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	var wg sync.WaitGroup
	ids := make([]string, 50)
	errs := make([]error, 50)
	for i := range ids {
		wg.Go(func() {
			tk, _, err := st.TaskInsert(ctx, store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID,
				Kind: task.KindDeploy, Pipeline: "noop", Priority: task.PriorityNormal, IdempotencyKey: "same", RequestHash: []byte("h")})
			errs[i] = err
			if tk != nil {
				ids[i] = tk.ID
			}
		})
	}
	wg.Wait()
	for i := range ids {
		require.NoError(t, errs[i])
		require.Equal(t, ids[0], ids[i])
	}
	tasks, _, err := st.TaskList(ctx, store.TaskListParams{TeamIDs: u.TeamIDs()})
	require.NoError(t, err)
	require.Len(t, tasks, 1)
}

func TestClaimOrderAndFencing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	low := testfactory.Task(t, st, u, &testfactory.TaskOpts{Priority: task.PriorityLow})
	normal1 := testfactory.Task(t, st, u, nil)
	hotfix := testfactory.Task(t, st, u, &testfactory.TaskOpts{Priority: task.PriorityHotfix})
	normal2 := testfactory.Task(t, st, u, nil)

	t.Run("PriorityThenAge", func(t *testing.T) {
		claimed, err := st.TaskClaim(ctx, "w1", 3, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 3)
		require.Equal(t, []string{hotfix.ID, normal1.ID, normal2.ID}, []string{claimed[0].Task.ID, claimed[1].Task.ID, claimed[2].Task.ID})
		for _, c := range claimed {
			require.Equal(t, task.StateRunning, c.Task.State)
			require.NotEmpty(t, c.Task.LeaseToken)
			require.Equal(t, 1, c.Task.Attempt)
		}
		rest, err := st.TaskClaim(ctx, "w2", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, rest, 1)
		require.Equal(t, low.ID, rest[0].Task.ID)
	})

	t.Run("StaleOwnerWritesNothing", func(t *testing.T) {
		tk := testfactory.Task(t, st, u, &testfactory.TaskOpts{Priority: task.PriorityHotfix})
		first, err := st.TaskClaim(ctx, "w1", 1, time.Millisecond)
		require.NoError(t, err)
		require.Equal(t, tk.ID, first[0].Task.ID)
		// The lease expires (database clock) and the rescuer re-queues it.
		require.Eventually(t, func() bool {
			n, err := st.TaskRescue(ctx, 100, queue.Rescue)
			return err == nil && n > 0
		}, 10*time.Second, 5*time.Millisecond)
		second, err := st.TaskClaim(ctx, "w2", 1, time.Minute)
		require.NoError(t, err)
		require.Equal(t, tk.ID, second[0].Task.ID)
		require.Equal(t, 2, second[0].Task.Attempt)

		written, err := st.TaskWrites(ctx, []store.TaskWrite{{ID: tk.ID, Token: first[0].Task.LeaseToken, State: task.StateCompleted, Release: true}})
		require.NoError(t, err)
		require.NotContains(t, written, tk.ID, "stale token changes nothing")
		require.ErrorIs(t, st.EventAppend(ctx, tk.ID, first[0].Task.LeaseToken, []task.Event{{Type: task.EventStepLog, Status: task.StatusLog}}), store.ErrLeaseLost)
		sts, err := st.TaskHeartbeat(ctx, []store.Lease{{ID: tk.ID, Token: first[0].Task.LeaseToken}}, time.Minute)
		require.NoError(t, err)
		require.Empty(t, sts, "a stale heartbeat renews nothing")

		got, err := st.TaskGet(ctx, u.TeamIDs(), tk.ID)
		require.NoError(t, err)
		require.Equal(t, task.StateRunning, got.State)

		written, err = st.TaskWrites(ctx, []store.TaskWrite{{ID: tk.ID, Token: second[0].Task.LeaseToken, State: task.StateCompleted, Release: true,
			Events: []task.Event{{Type: task.EventTaskCompleted, Status: task.StatusCompleted, Message: "done"}}}})
		require.NoError(t, err)
		require.Contains(t, written, tk.ID)
		assertSeqs(t, st, u, tk.ID)
	})
}

func TestCancel(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	other := testfactory.User(t, st, "b@rival.test", "rival", auth.RoleAdmin)

	pending := testfactory.Task(t, st, u, &testfactory.TaskOpts{Steps: []string{"one", "two"}})
	_, err := st.TaskCancel(ctx, other.TeamIDs(), pending.ID, "b@rival.test")
	require.ErrorIs(t, err, store.ErrNotFound, "another team's task does not exist")
	got, err := st.TaskCancel(ctx, u.TeamIDs(), pending.ID, "a@acme.test")
	require.NoError(t, err)
	require.Equal(t, task.StateCancelled, got.State)
	_, err = st.TaskCancel(ctx, u.TeamIDs(), pending.ID, "a@acme.test")
	require.ErrorIs(t, err, store.ErrTerminal)
	evs, err := st.EventList(ctx, u.TeamIDs(), pending.ID, 0, 0)
	require.NoError(t, err)
	require.Equal(t, task.EventTaskCancelled, evs[len(evs)-1].Type)
	steps, err := st.StepList(ctx, pending.ID)
	require.NoError(t, err)
	require.Len(t, steps, 2)
	for _, s := range steps {
		require.Equal(t, task.StepSkipped, s.State, "a step of a task cancelled before it ran never runs")
	}

	running := testfactory.Task(t, st, u, nil)
	claimed, err := st.TaskClaim(ctx, "w1", 1, time.Minute)
	require.NoError(t, err)
	require.Equal(t, running.ID, claimed[0].Task.ID)
	got, err = st.TaskCancel(ctx, u.TeamIDs(), running.ID, "a@acme.test")
	require.NoError(t, err)
	require.Equal(t, task.StateRunning, got.State, "the worker stops it")
	require.True(t, got.CancelRequested)
	sts, err := st.TaskHeartbeat(ctx, []store.Lease{{ID: running.ID, Token: claimed[0].Task.LeaseToken}}, time.Minute)
	require.NoError(t, err)
	require.True(t, sts[0].CancelRequested, "the heartbeat delivers it too")
	assertSeqs(t, st, u, pending.ID)
	assertSeqs(t, st, u, running.ID)
}

// assertSeqs checks a task's events are numbered 1..n with no gap.
func assertSeqs(t *testing.T, st *store.Store, u *auth.User, id string) {
	t.Helper()
	evs, err := st.EventList(context.Background(), u.TeamIDs(), id, 0, 0)
	require.NoError(t, err)
	for i, e := range evs {
		require.Equal(t, i+1, e.Seq)
	}
}

func TestTaskGetMany(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	a := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	b := testfactory.User(t, st, "b@rival.test", "rival", auth.RoleDeployer)
	a1 := testfactory.Task(t, st, a, nil)
	a2 := testfactory.Task(t, st, a, nil)
	b1 := testfactory.Task(t, st, b, nil)

	got, err := st.TaskGetMany(ctx, a.TeamIDs(), []string{a2.ID, "not-a-uuid", b1.ID, a1.ID, "00000000-0000-0000-0000-000000000000"})
	require.NoError(t, err)
	require.Len(t, got, 2, "other teams' and unknown ids are left out")
	require.Equal(t, a2.ID, got[0].ID, "in the order asked")
	require.Equal(t, a1.ID, got[1].ID)
	require.Equal(t, "acme", got[0].Team)

	got, err = st.TaskGetMany(ctx, append(a.TeamIDs(), b.TeamIDs()...), []string{b1.ID})
	require.NoError(t, err)
	require.Len(t, got, 1)
	got, err = st.TaskGetMany(ctx, nil, []string{a1.ID})
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestTaskTeamIDs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	a := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	b := testfactory.User(t, st, "b@rival.test", "rival", auth.RoleDeployer)
	a1 := testfactory.Task(t, st, a, nil)
	a2 := testfactory.Task(t, st, a, nil)
	b1 := testfactory.Task(t, st, b, nil)

	got, err := st.TaskTeamIDs(ctx, []string{a1.ID, a2.ID, "not-a-uuid", "00000000-0000-0000-0000-000000000000"})
	require.NoError(t, err)
	require.Equal(t, a.TeamIDs(), got, "once each; unknown ids are left out")
	got, err = st.TaskTeamIDs(ctx, []string{b1.ID, a1.ID})
	require.NoError(t, err)
	require.ElementsMatch(t, append(a.TeamIDs(), b.TeamIDs()...), got)
	got, err = st.TaskTeamIDs(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, got)
}

// TestQueueBoundUnderConcurrency: 30 submissions at once against a bound of
// 10 make exactly 10 tasks; the rest are told the queue is full.
func TestQueueBoundUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	var wg sync.WaitGroup
	errs := make([]error, 30)
	for i := range errs {
		wg.Go(func() {
			_, _, errs[i] = st.TaskInsert(ctx, store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID,
				Kind: task.KindDeploy, Pipeline: "noop", Priority: task.PriorityNormal, MaxPending: 10})
		})
	}
	wg.Wait()
	created, full := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case errors.Is(err, store.ErrQueueFull):
			full++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	require.Equal(t, 10, created)
	require.Equal(t, 20, full)
}

// TestUUIDStrings: ids held as strings travel as binary uuids, and one
// that is no uuid is still refused by the server as before.
func TestUUIDStrings(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	tk := testfactory.Task(t, st, u, nil)
	var n int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM tasks WHERE id = ANY($1::uuid[]) AND id = $2`,
		[]string{tk.ID, "6ba7b810-9dad-11d1-80b4-00c04fd430c8"}, tk.ID).Scan(&n))
	require.Equal(t, 1, n)
	_, err := st.Pool().Exec(ctx, `SELECT count(*) FROM tasks WHERE id = $1`, "not-a-uuid")
	require.Error(t, err)
	require.Contains(t, err.Error(), "22P02", "invalid input syntax, from the server")
}

// Task ids are UUIDv7: the creation millisecond first, so ids sort in the
// order tasks were made (migration 00013), and the version and variant of
// RFC 9562.
func TestTaskIDsAreTimeOrdered(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	millis := func(tk *task.Task) int64 {
		t.Helper()
		require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, tk.ID)
		ms, err := strconv.ParseInt(strings.ReplaceAll(tk.ID[:13], "-", ""), 16, 64)
		require.NoError(t, err)
		// the id's clock is read during the insert, after its transaction began
		require.GreaterOrEqual(t, ms, tk.CreatedAt.UnixMilli())
		require.Less(t, ms, tk.CreatedAt.Add(time.Minute).UnixMilli())
		return ms
	}
	first := testfactory.Task(t, st, u, nil)
	second := testfactory.Task(t, st, u, nil)
	require.LessOrEqual(t, millis(first), millis(second))
}
