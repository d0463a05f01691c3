package retention_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/retention"
)

const day = 24 * time.Hour

type testBundle struct {
	pool *pgxpool.Pool
	st   *store.Store
	u    *auth.User
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := dbtest.DB(t)
	st := store.New(pool)
	return &testBundle{pool: pool, st: st, u: testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)}
}

func (b *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.pool.Exec(t.Context(), sql, args...)
	require.NoError(t, err)
}

// task makes a task in state that finished ago (0: not finished).
func (b *testBundle) task(t *testing.T, state string, ago time.Duration) string {
	t.Helper()
	tk := testfactory.Task(t, b.st, b.u, nil)
	var finished any
	if ago > 0 {
		finished = time.Now().Add(-ago)
	}
	testfactory.Fixture(t, b.pool, `UPDATE tasks SET state = $2, finished_at = $3 WHERE id = $1`, tk.ID, state, finished)
	return tk.ID
}

// effect records an effect of taskID ("": recorded before effects named
// their task) made ago.
func (b *testBundle) effect(t *testing.T, key, taskID string, ago time.Duration) {
	t.Helper()
	b.exec(t, `INSERT INTO local_effects (idempotency_key, action, output, created_at, task_id)
		VALUES ($1, 'local.dns_create', '{}', $2, NULLIF($3, '')::uuid)`, key, time.Now().Add(-ago), taskID)
}

// gone is the id of a task that no longer exists.
const gone = "00000000-0000-4000-8000-000000000000"

func (b *testBundle) left(t *testing.T, sql string) []string {
	t.Helper()
	return dbtest.Strings(t, b.pool, sql)
}

func TestLocalEffectsOutliveEveryRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Ended long ago: its effects (forward and compensation) go.
	done := b.task(t, "completed", 10*day)
	b.effect(t, "old-done", done, 11*day)
	undone := b.task(t, "cancelled", 9*day)
	b.effect(t, "old-undone", undone, 10*day)
	b.effect(t, "old-undone:compensate", undone, 9*day)
	// Ended recently: kept, however old the effect.
	b.effect(t, "recent", b.task(t, "failed", 1*day), 20*day)
	// Not ended (a compensation may be retried from needs_attention, a
	// parked task resumed): kept.
	stuck := b.task(t, "needs_attention", 0)
	b.effect(t, "stuck", stuck, 30*day)
	b.effect(t, "stuck:compensate", stuck, 30*day)
	b.effect(t, "parked", b.task(t, "awaiting_approval", 0), 30*day)
	// The task was deleted: by the effect's own age.
	b.effect(t, "orphan-old", gone, 8*day)
	b.effect(t, "orphan-new", gone, 1*day)
	// Recorded before effects named their task: kept.
	b.effect(t, "legacy", "", 90*day)

	c := retention.New(b.st, retention.Config{Batch: 2})
	r, err := c.RunOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, 4, r.LocalEffects, "in batches of 2 until one came back short")
	require.ElementsMatch(t, []string{"recent", "stuck", "stuck:compensate", "parked", "orphan-new", "legacy"},
		b.left(t, `SELECT idempotency_key FROM local_effects`))

	r, err = c.RunOnce(t.Context())
	require.NoError(t, err)
	require.Zero(t, r.LocalEffects, "a second pass finds nothing")
}

func TestWebhookDeliveriesEndedLongAgo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := testfactory.Task(t, b.st, b.u, nil)
	add := func(id, state string, created time.Duration, set string) {
		_, err := b.st.WebhookDeliveryEnqueue(t.Context(), []store.WebhookDeliveryParams{{ID: id, TeamID: b.u.Memberships[0].TeamID,
			TaskID: tk.ID, Seq: 1, EventType: "task.completed", URL: "https://hooks.test/x", Body: []byte(`{}`)}})
		require.NoError(t, err)
		b.exec(t, `UPDATE webhook_deliveries SET state = $2, created_at = now() - make_interval(secs => $3)`+set+` WHERE id = $1`,
			id, state, created.Seconds())
	}
	add("succeeded-old", "succeeded", 9*day, `, delivered_at = now() - interval '8 days'`)
	add("failed-old", "failed", 12*day, `, last_attempt_at = now() - interval '9 days'`)
	add("failed-never-tried", "failed", 8*day, ``)
	add("succeeded-recent", "succeeded", 9*day, `, delivered_at = now() - interval '1 day'`)
	add("failed-retried-lately", "failed", 12*day, `, last_attempt_at = now() - interval '2 days'`)
	add("pending-old", "pending", 30*day, `, last_attempt_at = now() - interval '29 days'`)

	r, err := retention.New(b.st, retention.Config{}).RunOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, r.WebhookDeliveries)
	require.ElementsMatch(t, []string{"succeeded-recent", "failed-retried-lately", "pending-old"},
		b.left(t, `SELECT id FROM webhook_deliveries`))

	r, err = retention.New(b.st, retention.Config{WebhookDeliveries: 36 * time.Hour}).RunOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, r.WebhookDeliveries, "the retention is configurable")
	require.ElementsMatch(t, []string{"succeeded-recent", "pending-old"}, b.left(t, `SELECT id FROM webhook_deliveries`))
}

func TestCleanersInParallelSplitTheWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 500
	b.exec(t, `INSERT INTO local_effects (idempotency_key, action, output, created_at, task_id)
		SELECT 'orphan-' || g, 'local.dns_create', '{}', now() - interval '8 days', $2::uuid FROM generate_series(1, $1) g`, n, gone)
	var wg sync.WaitGroup
	results := make([]retention.Result, 4)
	errs := make([]error, 4)
	for i := range results {
		wg.Go(func() {
			results[i], errs[i] = retention.New(b.st, retention.Config{Batch: 25}).RunOnce(context.WithoutCancel(t.Context()))
		})
	}
	wg.Wait()
	total := 0
	for i := range results {
		require.NoError(t, errs[i])
		total += results[i].LocalEffects
	}
	require.Equal(t, n, total, "each row deleted exactly once")
	require.Empty(t, b.left(t, `SELECT idempotency_key FROM local_effects`))
}

func TestRunPrunesAtStartAndStopsWithItsContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.effect(t, "orphan", gone, 8*day)
	ctx, cancel := context.WithCancel(t.Context())
	passes := make(chan retention.Result, 1)
	done := make(chan error, 1)
	c := retention.New(b.st, retention.Config{Interval: time.Hour, PassFunc: func(r retention.Result, err error) {
		require.NoError(t, err)
		passes <- r
	}})
	go func() { done <- c.Run(ctx) }()
	select {
	case r := <-passes:
		require.Equal(t, 1, r.LocalEffects, "the first pass runs at once")
	case <-time.After(30 * time.Second):
		t.Fatal("no pass")
	}
	cancel()
	require.NoError(t, <-done)
}

func TestTaskMinutesOlderThanADay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(t, `INSERT INTO task_minutes (team_id, minute, outcome, tasks)
		SELECT id, date_trunc('minute', now() - make_interval(hours => h)), 'completed', 1 FROM teams, unnest(ARRAY[1, 23, 25, 48]) AS h`)
	r, err := retention.New(b.st, retention.Config{}).RunOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, r.TaskMinutes)
	require.Len(t, b.left(t, `SELECT minute::text FROM task_minutes`), 2, "the last day's minutes stay")
}
