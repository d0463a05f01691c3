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

// TestClaimFromAKey: a claim that starts after a key skips the tasks before
// it in its own priority, still sees every task of a higher one, and a
// claim without a key sees everything.
func TestClaimFromAKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "keys@acme.test", "acme", auth.RoleDeployer)
	a := testfactory.Task(t, st, u, nil)
	b := testfactory.Task(t, st, u, nil)
	c := testfactory.Task(t, st, u, nil)

	open := func(after *store.ClaimKey) []string {
		t.Helper()
		tx, err := st.TaskClaimOpen(ctx, 10, after)
		require.NoError(t, err)
		if tx == nil {
			return nil
		}
		defer tx.Rollback()
		var ids []string
		for _, tk := range tx.Tasks {
			ids = append(ids, tk.ID)
		}
		return ids
	}
	require.Equal(t, []string{a.ID, b.ID, c.ID}, open(nil))
	kb := store.KeyOf(b)
	require.Equal(t, []string{c.ID}, open(&kb), "after b: only c")

	h := testfactory.Task(t, st, u, &testfactory.TaskOpts{Priority: task.PriorityHotfix})
	kc := store.KeyOf(c)
	require.Equal(t, []string{h.ID}, open(&kc), "a higher priority is never skipped")
	require.Equal(t, []string{h.ID, a.ID, b.ID, c.ID}, open(nil))

	// Committing a claim leases what it was told to and leaves the rest.
	tx, err := st.TaskClaimOpen(ctx, 2, nil)
	require.NoError(t, err)
	require.Len(t, tx.Tasks, 2)
	require.NoError(t, tx.Commit(ctx, "w1", time.Minute, tx.Tasks[:1], nil))
	require.NotEmpty(t, tx.Tasks[0].LeaseToken)
	require.Equal(t, []string{a.ID, b.ID, c.ID}, open(nil), "h is leased; a was locked, then left as it was")
}

// Only a first run may be finished inside its claim: its step rows are
// inserted as new ones. A task that ran before is refused, nothing is
// written, and the task stays claimable.
func TestClaimFinishesOnlyFirstRuns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "first@acme.test", "acme", auth.RoleDeployer)
	ran := testfactory.Task(t, st, u, nil)
	_, err := st.Pool().Exec(ctx, `UPDATE tasks SET started_at = now() - interval '1 minute' WHERE id = $1`, ran.ID)
	require.NoError(t, err)
	fresh := testfactory.Task(t, st, u, nil)

	tx, err := st.TaskClaimOpen(ctx, 10, nil)
	require.NoError(t, err)
	require.Len(t, tx.Tasks, 2)
	require.False(t, tx.Tasks[0].FirstRun)
	require.True(t, tx.Tasks[1].FirstRun)
	step := store.StepSave{Idx: 1, Name: "noop", IdempotencyKey: "k", State: "completed", Attempt: 1, Started: true, Finished: true}
	finish := func(id string) store.Finish {
		return store.Finish{ID: id, State: task.StateCompleted, Steps: []store.StepSave{step}}
	}
	err = tx.Commit(ctx, "w1", time.Minute, nil, []store.Finish{finish(ran.ID)})
	require.ErrorContains(t, err, "ran before")
	got, err := st.TaskGet(ctx, u.TeamIDs(), ran.ID)
	require.NoError(t, err)
	require.Equal(t, task.StatePending, got.State, "nothing of the refused claim was written")

	tx, err = st.TaskClaimOpen(ctx, 10, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx, "w1", time.Minute, nil, []store.Finish{finish(fresh.ID)}))
	got, err = st.TaskGet(ctx, u.TeamIDs(), fresh.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateCompleted, got.State)
	steps, err := st.StepList(ctx, fresh.ID)
	require.NoError(t, err)
	require.Len(t, steps, 1)
	require.Equal(t, "completed", steps[0].State)
}

// A claim names each task's team and creator, from the database the first
// time and from the store's cache after that.
func TestClaimNamesTeamsAndCreators(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	a := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	b := testfactory.User(t, st, "b@beta.test", "beta", auth.RoleDeployer)
	for range 2 {
		want := map[string][2]string{}
		for _, u := range []*auth.User{a, b, a} {
			tk := testfactory.Task(t, st, u, nil)
			want[tk.ID] = [2]string{u.Memberships[0].Team, u.Email}
		}
		tasks, err := st.TaskClaim(ctx, "w1", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, tasks, 3)
		for _, tk := range tasks {
			require.Equal(t, want[tk.ID], [2]string{tk.Team, tk.CreatedBy})
		}
	}
}
