package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// TestOutbox: a transaction that commits late (it started before others
// that commit first) is neither skipped nor read before its commit; one
// that rolls back is never read; every event is read exactly once.
func TestOutbox(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	const name = "test"
	_, err := st.OutboxRead(ctx, name, nil, 100) // creates the cursor at "now"
	require.NoError(t, err)

	a := testfactory.Task(t, st, u, nil)
	late, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer late.Rollback(ctx) //nolint:errcheck
	_, err = late.Exec(ctx, `INSERT INTO task_event_batches (task_id, first_seq, last_seq, events) VALUES ($1, 2, 2, '[{"type":"step.log","status":"log","message":"late"}]')`, a.ID)
	require.NoError(t, err)
	undone, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer undone.Rollback(ctx) //nolint:errcheck
	_, err = undone.Exec(ctx, `INSERT INTO task_event_batches (task_id, first_seq, last_seq, events) VALUES ($1, 3, 3, '[{"type":"step.log","status":"log","message":"never"}]')`, a.ID)
	require.NoError(t, err)
	c := testfactory.Task(t, st, u, nil) // commits while late is open

	seen := map[string]int{}
	var order []string
	read := func() {
		b, err := st.OutboxRead(ctx, name, nil, 2) // small batches: the cursor moves often
		require.NoError(t, err)
		for _, e := range b.Events {
			k := fmt.Sprintf("%s/%d", e.TaskID, e.Seq)
			seen[k]++
			order = append(order, k)
			require.Equal(t, u.Memberships[0].TeamID, e.TeamID)
		}
		if b.Scanned > 0 {
			require.NoError(t, st.OutboxAdvance(ctx, name, b.Next))
		}
	}
	for range 5 {
		read()
	}
	lateKey, neverKey, cKey := a.ID+"/2", a.ID+"/3", c.ID+"/1"
	require.Zero(t, seen[lateKey], "uncommitted events are never read")
	require.Zero(t, seen[cKey], "events behind an open older transaction wait for it")

	require.NoError(t, undone.Rollback(ctx))
	require.NoError(t, late.Commit(ctx))
	require.Eventually(t, func() bool { read(); return seen[lateKey] > 0 && seen[cKey] > 0 }, 20*time.Second, 10*time.Millisecond)
	for range 3 {
		read()
	}
	require.Zero(t, seen[neverKey], "a rolled back event is never read")
	for k, n := range seen {
		require.Equal(t, 1, n, "%s read once", k)
	}
	require.Equal(t, 1, seen[a.ID+"/1"])
	// late's transaction started before c's: its event comes first.
	pos := map[string]int{}
	for i, k := range order {
		pos[k] = i
	}
	require.Less(t, pos[lateKey], pos[cKey])

	t.Run("TypeFilterStillAdvances", func(t *testing.T) {
		_, err := st.OutboxRead(ctx, "filtered", []string{string(task.EventTaskCompleted)}, 10)
		require.NoError(t, err)
		testfactory.Task(t, st, u, nil)
		var b store.OutboxBatch
		require.Eventually(t, func() bool {
			b, err = st.OutboxRead(ctx, "filtered", []string{string(task.EventTaskCompleted)}, 10)
			require.NoError(t, err)
			return b.Scanned > 0
		}, 20*time.Second, 10*time.Millisecond)
		require.Empty(t, b.Events, "task.state is not wanted")
		require.NoError(t, st.OutboxAdvance(ctx, "filtered", b.Next))
		b2, err := st.OutboxRead(ctx, "filtered", []string{string(task.EventTaskCompleted)}, 10)
		require.NoError(t, err)
		require.Zero(t, b2.Scanned, "skipped rows are not scanned again")
	})
}

// TestWebhookDeliveryClaim: concurrent claimers never share a delivery, and
// only the current claim records an outcome.
func TestWebhookDeliveryClaim(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleAdmin)
	tk := testfactory.Task(t, st, u, nil)
	var ds []store.WebhookDeliveryParams
	for i := range 40 {
		ds = append(ds, store.WebhookDeliveryParams{ID: fmt.Sprintf("msg_%d", i), TeamID: u.Memberships[0].TeamID,
			TaskID: tk.ID, Seq: i + 1, EventType: "task.completed", URL: "https://93.184.216.34/", Body: []byte("{}")})
	}
	n, err := st.WebhookDeliveryEnqueue(ctx, ds)
	require.NoError(t, err)
	require.Equal(t, 40, n)
	n, err = st.WebhookDeliveryEnqueue(ctx, ds)
	require.NoError(t, err)
	require.Zero(t, n, "same ids enqueue nothing")

	got := make(chan []store.WebhookDeliveryClaimed, 8)
	for range 8 {
		go func() {
			c, err := st.WebhookDeliveryClaim(ctx, 10, time.Minute)
			if err != nil {
				t.Error(err)
			}
			got <- c
		}()
	}
	claimed := map[string]string{}
	for range 8 {
		for _, c := range <-got {
			_, dup := claimed[c.ID]
			require.False(t, dup, "%s claimed twice", c.ID)
			claimed[c.ID] = c.ClaimToken
			require.Equal(t, 1, c.Attempt)
		}
	}
	require.Len(t, claimed, 40)
	again, err := st.WebhookDeliveryClaim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, again, "claimed deliveries are not due until the lease passes")

	err = st.WebhookDeliveryRecord(ctx, store.WebhookDeliveryOutcome{ID: "msg_0", ClaimToken: "00000000-0000-0000-0000-000000000001", Succeeded: true, Status: 200})
	require.ErrorIs(t, err, store.ErrClaimLost)
	require.NoError(t, st.WebhookDeliveryRecord(ctx, store.WebhookDeliveryOutcome{ID: "msg_0", ClaimToken: claimed["msg_0"], Succeeded: true, Status: 200}))
	require.ErrorIs(t, st.WebhookDeliveryRecord(ctx, store.WebhookDeliveryOutcome{ID: "msg_0", ClaimToken: claimed["msg_0"], Succeeded: true}), store.ErrClaimLost)
	// A failure past the retry window ends the delivery.
	require.NoError(t, st.WebhookDeliveryRecord(ctx, store.WebhookDeliveryOutcome{ID: "msg_1", ClaimToken: claimed["msg_1"],
		Status: 500, Error: "answered 500", RetryIn: time.Hour, MaxAge: time.Minute}))
	var state string
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT state FROM webhook_deliveries WHERE id = 'msg_1'`).Scan(&state))
	require.Equal(t, "failed", state)
	require.NoError(t, st.WebhookDeliveryRecord(ctx, store.WebhookDeliveryOutcome{ID: "msg_2", ClaimToken: claimed["msg_2"],
		Status: 500, Error: "answered 500", RetryIn: 0, MaxAge: time.Hour}))
	require.Eventually(t, func() bool {
		c, err := st.WebhookDeliveryClaim(ctx, 10, time.Minute)
		require.NoError(t, err)
		return len(c) == 1 && c[0].ID == "msg_2" && c[0].Attempt == 2
	}, 5*time.Second, 5*time.Millisecond, "a retry is due again with the next attempt number")
}
