package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

func claimIDs(t *testing.T, st *store.Store, owner string) map[string]string {
	t.Helper()
	claimed, err := st.TaskClaim(t.Context(), owner, 10, time.Minute)
	require.NoError(t, err)
	out := map[string]string{}
	for _, c := range claimed {
		out[c.Task.ID] = c.Task.LeaseToken
	}
	return out
}

// A task holds its concurrency key from its claim until it is terminal:
// meanwhile the next task of the key waits (pending, blocked_by the
// holder, holding back no task of another key), even when the holder is
// parked or handed back; the key of another team is another key.
func TestConcurrencyKeyIsHeldFromClaimToEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "keys@acme.test", "acme", auth.RoleDeployer)
	other := testfactory.User(t, st, "keys@beta.test", "beta", auth.RoleDeployer)
	key := func(k string) *testfactory.TaskOpts {
		return &testfactory.TaskOpts{ConcurrencyKey: k, ConcurrencyPolicy: "queue"}
	}
	first := testfactory.Task(t, st, u, key("shop:staging"))
	second := testfactory.Task(t, st, u, key("shop:staging"))
	elsewhere := testfactory.Task(t, st, u, key("shop:production"))
	free := testfactory.Task(t, st, u, nil)
	otherTeam := testfactory.Task(t, st, other, key("shop:staging"))

	got := claimIDs(t, st, "w1")
	require.ElementsMatch(t, []string{first.ID, elsewhere.ID, free.ID, otherTeam.ID}, keys(got), "one task per key and team")
	w, err := st.TaskGet(ctx, u.TeamIDs(), second.ID)
	require.NoError(t, err)
	require.Equal(t, task.StatePending, w.State)
	require.Equal(t, first.ID, *w.BlockedBy)
	require.Empty(t, claimIDs(t, st, "w2"), "nothing else is claimable")

	// Handed back: still the holder, and claimed again before the waiter.
	_, err = st.TaskWrites(ctx, []store.TaskWrite{{ID: first.ID, Token: got[first.ID], State: task.StatePending, Release: true}})
	require.NoError(t, err)
	again := claimIDs(t, st, "w2")
	require.Equal(t, []string{first.ID}, keys(again))

	// Terminal: the key goes to the next task.
	_, err = st.TaskWrites(ctx, []store.TaskWrite{{ID: first.ID, Token: again[first.ID], State: task.StateCompleted, Release: true}})
	require.NoError(t, err)
	w, err = st.TaskGet(ctx, u.TeamIDs(), second.ID)
	require.NoError(t, err)
	require.Nil(t, w.BlockedBy)
	require.Equal(t, []string{second.ID}, keys(claimIDs(t, st, "w3")))
}

// cancel_newest: while a task holds the key, a new one is cancelled at
// once. cancel_in_progress: a new task cancels the holder (it compensates)
// and the ones waiting, then runs when the key is free.
func TestConcurrencyPolicies(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "pol@acme.test", "acme", auth.RoleDeployer)

	t.Run("CancelNewest", func(t *testing.T) {
		opts := &testfactory.TaskOpts{ConcurrencyKey: "newest", ConcurrencyPolicy: "cancel_newest"}
		holder := testfactory.Task(t, st, u, opts)
		require.Contains(t, keys(claimIDs(t, st, "w1")), holder.ID)
		late := testfactory.Task(t, st, u, opts)
		require.Equal(t, task.StateCancelled, late.State)
		require.Contains(t, *late.Error, holder.ID)
		require.NotNil(t, late.FinishedAt)
		evs, err := st.EventList(ctx, u.TeamIDs(), late.ID, 0, 0)
		require.NoError(t, err)
		require.Len(t, evs, 2)
		require.Equal(t, task.EventTaskCancelled, evs[1].Type)
	})

	t.Run("CancelInProgress", func(t *testing.T) {
		opts := &testfactory.TaskOpts{ConcurrencyKey: "progress", ConcurrencyPolicy: "cancel_in_progress"}
		holder := testfactory.Task(t, st, u, opts)
		require.Contains(t, keys(claimIDs(t, st, "w1")), holder.ID)
		waiting := testfactory.Task(t, st, u, &testfactory.TaskOpts{ConcurrencyKey: "progress", ConcurrencyPolicy: "queue"})
		newest := testfactory.Task(t, st, u, opts)
		require.Equal(t, task.StatePending, newest.State)
		h, err := st.TaskGet(ctx, u.TeamIDs(), holder.ID)
		require.NoError(t, err)
		require.True(t, h.CancelRequested, "the holder is told to stop and compensate")
		w, err := st.TaskGet(ctx, u.TeamIDs(), waiting.ID)
		require.NoError(t, err)
		require.Equal(t, task.StateCancelled, w.State, "a waiting task is superseded at once")
		require.Equal(t, holder.ID, *must(st.TaskGet(ctx, u.TeamIDs(), newest.ID)).BlockedBy)
	})
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
