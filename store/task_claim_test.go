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
