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

// The heartbeat is the pause's backup path (a lost NOTIFY): it reports the
// request, and the park that follows clears it.
func TestHeartbeatReportsAPauseAndTheParkClearsIt(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	tk := testfactory.Task(t, st, u, nil)
	claimed, err := st.TaskClaim(t.Context(), "w1", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	lease := store.Lease{ID: tk.ID, Token: claimed[0].Task.LeaseToken}
	sts, err := st.TaskHeartbeat(t.Context(), []store.Lease{lease}, time.Minute)
	require.NoError(t, err)
	require.False(t, sts[0].PauseRequested)

	_, err = st.TaskPause(t.Context(), u.TeamIDs(), tk.ID, u.Email)
	require.NoError(t, err)
	sts, err = st.TaskHeartbeat(t.Context(), []store.Lease{lease}, time.Minute)
	require.NoError(t, err)
	require.True(t, sts[0].PauseRequested)

	written, err := st.TaskWrites(t.Context(), []store.TaskWrite{{ID: tk.ID, Token: lease.Token, State: task.StatePaused, Release: true,
		Events: []task.Event{{Type: task.EventTaskPaused, Status: task.StatusLog, Message: "Task paused"}}}})
	require.NoError(t, err)
	require.Equal(t, task.StatePaused, written[tk.ID].State)
	got, err := st.TaskGet(t.Context(), u.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.False(t, got.PauseRequested)
	require.Nil(t, got.FailedStep)
	var requested bool
	require.NoError(t, st.Pool().QueryRow(t.Context(), `SELECT pause_requested_at IS NOT NULL FROM tasks WHERE id = $1`, tk.ID).Scan(&requested))
	require.False(t, requested)
}

// A scheduled task paused and resumed before its time keeps waiting for it:
// a pause is no way around a wait.
func TestResumeBeforeRunAfterWaitsItOut(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	tk := testfactory.Task(t, st, u, nil)
	testfactory.Fixture(t, st.Pool(), `UPDATE tasks SET state = 'scheduled', run_after = now() + interval '1 hour' WHERE id = $1`, tk.ID)
	got, err := st.TaskPause(t.Context(), u.TeamIDs(), tk.ID, u.Email)
	require.NoError(t, err)
	require.Equal(t, task.StatePaused, got.State)
	got, err = st.TaskResume(t.Context(), store.TaskResumeParams{TeamIDs: u.TeamIDs(), ID: tk.ID, ActorID: u.ID, Actor: u.Email, ActorRole: "deployer"})
	require.NoError(t, err)
	require.Equal(t, task.StateScheduled, got.State)
}

// An overdue decision rolls its task back once, whatever the number of
// sweeps; a decision made in time is left alone.
func TestDecisionExpiryRollsBackOnce(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	due := testfactory.Task(t, st, u, nil)
	later := testfactory.Task(t, st, u, nil)
	for id, at := range map[string]string{due.ID: "now() - interval '1 second'", later.ID: "now() + interval '1 hour'"} {
		testfactory.Fixture(t, st.Pool(), `UPDATE tasks SET state = 'paused', started_at = now(),
			failed_step = '{"index":1,"name":"smoke","error":"503","attempt":1}', decision_expires_at = `+at+` WHERE id = $1`, id)
	}
	n, err := st.TaskDecisionExpire(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = st.TaskDecisionExpire(t.Context())
	require.NoError(t, err)
	require.Zero(t, n)
	got, err := st.TaskGet(t.Context(), u.TeamIDs(), due.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateCompensating, got.State)
	require.Contains(t, *got.Error, "step smoke failed: 503; no decision by")
	require.Nil(t, got.FailedStep)
	got, err = st.TaskGet(t.Context(), u.TeamIDs(), later.ID)
	require.NoError(t, err)
	require.Equal(t, task.StatePaused, got.State)
	var audits int
	require.NoError(t, st.Pool().QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE target = $1 AND actor = 'system'`, due.ID).Scan(&audits))
	require.Equal(t, 1, audits)
}
