package store_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
)

// A submit wakes this process's pools at once (OnTaskReady) and marks its
// NOTIFY with the store's origin, so a listener of the same store skips
// it and one of another process (another store) does not.
func TestTaskReadyWakeUps(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)

	conn, err := st.Pool().Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `LISTEN task_ready`)
	require.NoError(t, err)

	local := make(chan bool, 10)
	stop := st.OnTaskReady(func(requeue bool) { local <- requeue })
	testfactory.Task(t, st, u, nil)
	require.False(t, <-local, "a submit is not a requeue")

	var n *pgconn.Notification
	n, err = conn.Conn().WaitForNotification(ctx)
	require.NoError(t, err)
	wake, requeue := st.TaskReadyFromElsewhere(n.Payload)
	require.False(t, wake, "the submitting store was woken already: %q", n.Payload)
	require.False(t, requeue)
	other := store.New(st.Pool())
	wake, requeue = other.TaskReadyFromElsewhere(n.Payload)
	require.True(t, wake, "another process must be woken: %q", n.Payload)
	require.False(t, requeue)

	// Wake-ups sent by SQL, and batches mixing origins.
	for payload, want := range map[string][2]bool{"": {true, false}, "requeue": {true, true}, "@x,requeue@y": {true, true}} {
		wake, requeue := st.TaskReadyFromElsewhere(payload)
		require.Equal(t, want, [2]bool{wake, requeue}, "payload %q", payload)
	}

	stop()
	testfactory.Task(t, st, u, nil)
	select {
	case <-local:
		t.Fatal("woken after stop")
	default:
	}
}
