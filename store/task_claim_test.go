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

// A claim hands back the step rows a task's earlier runs left, so a resumed
// run goes on where the last one stopped; a task never run has none.
func TestClaimReturnsEarlierSteps(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "steps@acme.test", "acme", auth.RoleDeployer)
	tk := testfactory.Task(t, st, u, nil)

	claimed, err := st.TaskClaim(ctx, "w1", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Empty(t, claimed[0].Steps, "a first run finds no rows")
	msg := "boom"
	// The worker's times, well before the write: a fast step keeps its
	// 1.5 ms, however late the batched write goes out.
	began := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	ended := began.Add(1500 * time.Microsecond)
	written, err := st.TaskWrites(ctx, []store.TaskWrite{{ID: tk.ID, Token: claimed[0].Task.LeaseToken, State: task.StatePending, Release: true,
		Steps: []store.StepSave{
			{Idx: 1, Name: "one", IdempotencyKey: "k1", State: "completed", Attempt: 1, Output: []byte(`{"ok":1}`), StartedAt: &began, FinishedAt: &ended},
			{Idx: 2, Name: "two", IdempotencyKey: "k2", State: "running", Attempt: 2, Error: &msg, StartedAt: &began},
		}}})
	require.NoError(t, err)
	require.Equal(t, task.StatePending, written[tk.ID].State)

	claimed, err = st.TaskClaim(ctx, "w2", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	steps := claimed[0].Steps
	require.Len(t, steps, 2)
	require.Equal(t, task.StepCompleted, steps[0].State)
	require.JSONEq(t, `{"ok":1}`, string(steps[0].Output))
	require.NotNil(t, steps[0].FinishedAt)
	require.True(t, steps[0].StartedAt.Equal(began), "started_at is the worker's: %v, want %v", steps[0].StartedAt, began)
	require.True(t, steps[0].FinishedAt.Equal(ended), "finished_at is the worker's: %v, want %v", steps[0].FinishedAt, ended)
	require.Equal(t, "k2", steps[1].IdempotencyKey)
	require.Equal(t, 2, steps[1].Attempt)
	require.Equal(t, "boom", *steps[1].Error)
	require.Nil(t, steps[1].FinishedAt)
}

// TaskWrites applies a batch of writes, each under its own lease: every
// task's events get its next seqs, a state change keeps the lease, a
// release clears it, and a stale token writes nothing at all.
func TestTaskWritesFenceEachWrite(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "writes@acme.test", "acme", auth.RoleDeployer)
	a := testfactory.Task(t, st, u, nil)
	b := testfactory.Task(t, st, u, nil)
	c := testfactory.Task(t, st, u, nil)
	claimed, err := st.TaskClaim(ctx, "w1", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	token := map[string]string{}
	for _, cl := range claimed {
		token[cl.Task.ID] = cl.Task.LeaseToken
	}
	ev := func(msg string) task.Event {
		return task.Event{Type: task.EventStepLog, Status: task.StatusLog, Message: msg}
	}
	written, err := st.TaskWrites(ctx, []store.TaskWrite{
		{ID: a.ID, Token: token[a.ID], State: task.StateCompensating, Events: []task.Event{ev("a1"), ev("a2")}},
		{ID: b.ID, Token: token[b.ID], State: task.StateCompleted, Release: true, Events: []task.Event{ev("b1")}},
		{ID: c.ID, Token: "00000000-0000-0000-0000-000000000000", State: task.StateFailed, Release: true, Events: []task.Event{ev("c1")},
			Steps: []store.StepSave{{Idx: 1, Name: "x", IdempotencyKey: "k", State: "completed"}}},
	})
	require.NoError(t, err)
	require.Equal(t, map[string]store.Written{a.ID: {State: task.StateCompensating, LastSeq: 3}, b.ID: {State: task.StateCompleted, LastSeq: 2}}, written)

	got, err := st.TaskGet(ctx, u.TeamIDs(), a.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateCompensating, got.State)
	var owner *string
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT lease_owner FROM tasks WHERE id = $1`, a.ID).Scan(&owner))
	require.Equal(t, "w1", *owner, "a state change keeps the lease")
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT lease_owner FROM tasks WHERE id = $1`, b.ID).Scan(&owner))
	require.Nil(t, owner, "a release clears it")
	got, err = st.TaskGet(ctx, u.TeamIDs(), b.ID)
	require.NoError(t, err)
	require.NotNil(t, got.FinishedAt)

	evs, err := st.EventList(ctx, u.TeamIDs(), a.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	require.Equal(t, "a2", evs[2].Message)
	evs, err = st.EventList(ctx, u.TeamIDs(), c.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1, "the stale write added nothing")
	steps, err := st.StepList(ctx, c.ID)
	require.NoError(t, err)
	require.Empty(t, steps)
	got, err = st.TaskGet(ctx, u.TeamIDs(), c.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateRunning, got.State)
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
		claimed, err := st.TaskClaim(ctx, "w1", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 3)
		for _, c := range claimed {
			require.Equal(t, want[c.Task.ID], [2]string{c.Task.Team, c.Task.CreatedBy})
		}
	}
}

// TestTaskWritesApplyOnceWhenRetried: a write whose commit's reply was
// lost (a restart between the commit and its answer) is tried again by
// the writer with the same WriteID; it is answered as written and applied
// once: no second event batch, no second count in the rollups, and a park
// that released the lease is still answered.
func TestTaskWritesApplyOnceWhenRetried(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "retry@acme.test", "acme", auth.RoleDeployer)
	tk := testfactory.Task(t, st, u, nil)
	claimed, err := st.TaskClaim(ctx, "w1", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	token := claimed[0].Task.LeaseToken
	ev := task.Event{Type: task.EventStepLog, Status: task.StatusLog, Message: "once"}
	// the writer's second and later tries say so
	retry := func(w store.TaskWrite) store.TaskWrite { w.Retried = true; return w }

	progress := store.TaskWrite{ID: tk.ID, Token: token, WriteID: store.NewTaskID(), Events: []task.Event{ev}}
	first, err := st.TaskWrites(ctx, []store.TaskWrite{progress})
	require.NoError(t, err)
	unsaid, err := st.TaskWrites(ctx, []store.TaskWrite{progress})
	require.NoError(t, err)
	require.Empty(t, unsaid, "not said to be a retry: not looked for, and not applied twice")
	again, err := st.TaskWrites(ctx, []store.TaskWrite{retry(progress)})
	require.NoError(t, err)
	require.Equal(t, first, again, "the retry is answered as the first try")
	evs, err := st.EventList(ctx, u.TeamIDs(), tk.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 2, "submitted, and the progress once")

	done := store.TaskWrite{ID: tk.ID, Token: token, WriteID: store.NewTaskID(), State: task.StateCompleted, Release: true,
		Events: []task.Event{{Type: task.EventTaskCompleted, Status: task.StatusCompleted, Message: "done"}}}
	first, err = st.TaskWrites(ctx, []store.TaskWrite{done})
	require.NoError(t, err)
	require.Equal(t, task.StateCompleted, first[tk.ID].State)
	again, err = st.TaskWrites(ctx, []store.TaskWrite{retry(done)})
	require.NoError(t, err)
	require.Equal(t, first, again, "the lease is gone, but the retry is the write that released it")
	evs, err = st.EventList(ctx, u.TeamIDs(), tk.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	foldAll(t, st)
	since := time.Now().Add(-48 * time.Hour)
	rollups, err := st.TaskRollupList(ctx, u.TeamIDs(), since, since)
	require.NoError(t, err)
	tasks := 0
	for _, r := range rollups {
		tasks += r.Tasks
	}
	require.Equal(t, 1, tasks, "the task is counted once")

	// Another write of a stale owner is still refused.
	stale, err := st.TaskWrites(ctx, []store.TaskWrite{{ID: tk.ID, Token: token, WriteID: store.NewTaskID(), Events: []task.Event{ev}}})
	require.NoError(t, err)
	require.Empty(t, stale)

	// A park retried after its commit: answered, its approval made once.
	parked := testfactory.Task(t, st, u, nil)
	claimed, err = st.TaskClaim(ctx, "w1", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	park := store.TaskWrite{ID: parked.ID, Token: claimed[0].Task.LeaseToken, WriteID: store.NewTaskID(), State: task.StateAwaitingApproval,
		Release: true, Approvals: &store.ApprovalPark{Steps: []store.ApprovalStep{{Idx: 1, Name: "release", Attempt: 1}}, Roles: []string{"approver"}, Timeout: time.Hour},
		Events: []task.Event{{Type: task.EventTaskState, Status: task.StatusApproval, Message: "Waiting for approval"}}}
	first, err = st.TaskWrites(ctx, []store.TaskWrite{park})
	require.NoError(t, err)
	require.Len(t, first, 1)
	again, err = st.TaskWrites(ctx, []store.TaskWrite{retry(park)})
	require.NoError(t, err)
	require.Equal(t, first, again)
	aps, err := st.ApprovalList(ctx, u.TeamIDs(), parked.ID)
	require.NoError(t, err)
	require.Len(t, aps, 1)
	require.Equal(t, task.ApprovalPending, aps[0].State)
}
