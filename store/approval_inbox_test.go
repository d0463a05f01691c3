package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
)

func TestApprovalInbox(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	dev := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	approver := testfactory.User(t, st, "approver@acme.test", "acme", auth.RoleApprover)
	viewer := testfactory.User(t, st, "viewer@acme.test", "acme", auth.RoleViewer)
	rival := testfactory.User(t, st, "boss@rival.test", "rival", auth.RoleAdmin)

	mine := testfactory.Task(t, st, dev, &testfactory.TaskOpts{Pipeline: "approval-demo"})
	a := testfactory.AwaitingApproval(t, st, mine.ID, []string{"approver", "admin"})
	own := testfactory.Task(t, st, approver, &testfactory.TaskOpts{Pipeline: "approval-demo"})
	testfactory.AwaitingApproval(t, st, own.ID, []string{"approver", "admin"})
	adminOnly := testfactory.Task(t, st, dev, &testfactory.TaskOpts{Pipeline: "approval-demo"})
	testfactory.AwaitingApproval(t, st, adminOnly.ID, []string{"admin"})

	items, err := st.ApprovalInbox(ctx, approver.ID, 10)
	require.NoError(t, err)
	require.Len(t, items, 1, "not their own task (four eyes), not a role they lack")
	require.Equal(t, a.ID, items[0].ID)
	require.Equal(t, mine.ID, items[0].TaskID)
	require.Equal(t, "approval-demo", items[0].Pipeline)
	require.Equal(t, "dev@acme.test", items[0].CreatedBy)
	require.Equal(t, "acme", items[0].Team)
	require.Equal(t, "release", items[0].Step)

	for _, u := range []*auth.User{dev, viewer, rival} {
		items, err := st.ApprovalInbox(ctx, u.ID, 10)
		require.NoError(t, err)
		require.Empty(t, items, u.Email)
	}

	_, err = st.ApprovalDecide(ctx, store.ApprovalDecideParams{TeamIDs: approver.TeamIDs(), TaskID: mine.ID, ApprovalID: a.ID,
		Approve: true, ActorID: approver.ID, Actor: approver.Email, ActorRole: "approver"})
	require.NoError(t, err)
	items, err = st.ApprovalInbox(ctx, approver.ID, 10)
	require.NoError(t, err)
	require.Empty(t, items, "a decided approval leaves the inbox")
}
