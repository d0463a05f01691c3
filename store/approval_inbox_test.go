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
	items0 := items
	require.Equal(t, a.ID, items[0].ID)
	require.Equal(t, mine.ID, items[0].TaskID)
	require.Equal(t, "approval-demo", items[0].Pipeline)
	require.Equal(t, "dev@acme.test", items[0].CreatedBy)
	require.Equal(t, "acme", items[0].Team)
	require.Equal(t, "release", items[0].Step)

	n, err := st.ApprovalInboxCount(ctx, approver.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the badge counts what the inbox lists")

	// The creator sees what their own tasks wait for; the approver's own
	// task waits for someone else too.
	waiting, err := st.ApprovalWaitingOn(ctx, dev.ID, 10)
	require.NoError(t, err)
	require.Len(t, waiting, 2)
	require.Equal(t, mine.ID, waiting[0].TaskID)
	require.Equal(t, adminOnly.ID, waiting[1].TaskID)
	require.Equal(t, dev.TeamIDs()[0], waiting[0].TeamID)
	waiting, err = st.ApprovalWaitingOn(ctx, approver.ID, 10)
	require.NoError(t, err)
	require.Len(t, waiting, 1)
	require.Equal(t, own.ID, waiting[0].TaskID)

	for _, u := range []*auth.User{viewer, rival} {
		items, err := st.ApprovalInbox(ctx, u.ID, 10)
		require.NoError(t, err)
		require.Empty(t, items, u.Email)
	}

	// An agent's tool call may be confirmed by the task's creator.
	agentTask := testfactory.Task(t, st, dev, &testfactory.TaskOpts{Pipeline: "noop"})
	call := testfactory.AwaitingApprovalOf(t, st, agentTask.ID, []string{"approver", "admin"}, "tool_call")
	items, err = st.ApprovalInbox(ctx, dev.ID, 10)
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, call.ID, items[0].ID)
	items, err = st.ApprovalInbox(ctx, viewer.ID, 10)
	require.NoError(t, err)
	require.Empty(t, items)
	items, err = st.ApprovalInbox(ctx, approver.ID, 10)
	require.NoError(t, err)
	require.Len(t, items, 2, "an approver confirms anyone's tool call")
	require.Equal(t, items0[0].ID, items[0].ID)
	waiting, err = st.ApprovalWaitingOn(ctx, dev.ID, 10)
	require.NoError(t, err)
	require.Len(t, waiting, 2, "a tool call its creator may confirm is in their inbox, not waiting")
	n, err = st.ApprovalInboxCount(ctx, dev.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	_, err = st.ApprovalDecide(ctx, store.ApprovalDecideParams{TeamIDs: approver.TeamIDs(), TaskID: mine.ID, ApprovalID: a.ID,
		Approve: true, ActorID: approver.ID, Actor: approver.Email, ActorRole: "approver"})
	require.NoError(t, err)
	items, err = st.ApprovalInbox(ctx, approver.ID, 10)
	require.NoError(t, err)
	require.Len(t, items, 1, "a decided approval leaves the inbox")
	require.Equal(t, call.ID, items[0].ID)
}
