package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// timeRunsOut ends the submitting request's context right after the
// statement that commits the new task: the database answered the commit,
// then went away (or the request's time ran out) before anything else.
type timeRunsOut struct {
	after  string // the statement whose end commits: the insert itself, or "commit"
	cancel context.CancelFunc
	mu     sync.Mutex
	armed  bool // the insert ran
}

type sqlKey struct{}

func (c *timeRunsOut) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, sqlKey{}, data.SQL)
}

func (c *timeRunsOut) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(sqlKey{}).(string)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = c.armed || strings.Contains(sql, "INSERT INTO tasks")
	if c.armed && data.Err == nil && strings.Contains(strings.ToLower(sql), strings.ToLower(c.after)) {
		c.cancel()
	}
}

// TestTaskInsertAnswersACommittedTask: once the task is committed it will
// run, so TaskInsert returns it even when it cannot read it back; an error
// there made the API answer 503 for a task that then ran (seen with
// pg_ctl stop -m fast under load), and a client retrying without a key
// would have submitted it twice.
func TestTaskInsertAnswersACommittedTask(t *testing.T) {
	t.Parallel()
	pool := dbtest.DB(t)
	plain := store.New(pool)
	u := testfactory.User(t, plain, "a@acme.test", "acme", auth.RoleDeployer)
	for _, c := range []struct {
		name       string
		maxPending int
		after      string
	}{
		{"OneStatement", 0, "INSERT INTO tasks"},
		{"UnderTheTeamLock", 10, "commit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			cfg := pool.Config()
			cfg.ConnConfig.Tracer = &timeRunsOut{after: c.after, cancel: cancel}
			traced, err := pgxpool.NewWithConfig(t.Context(), cfg)
			require.NoError(t, err)
			defer traced.Close()
			tk, created, err := store.New(traced).TaskInsert(ctx, store.TaskInsertParams{
				TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Kind: task.KindDeploy, Pipeline: "noop",
				Priority: task.PriorityHigh, MaxPending: c.maxPending, RequestHash: []byte(c.name),
				Team: "acme", CreatedBy: "a@acme.test"})
			require.Error(t, ctx.Err(), "the fault did not fall after the commit")
			require.NoError(t, err)
			require.True(t, created)
			stored, err := plain.TaskGet(t.Context(), u.TeamIDs(), tk.ID)
			require.NoError(t, err, "the task answered is the one committed")
			require.Equal(t, stored.State, tk.State)
			require.Equal(t, stored.CreatedAt, tk.CreatedAt)
			require.Equal(t, stored.Team, tk.Team)
			require.Equal(t, stored.CreatedBy, tk.CreatedBy)
			require.Equal(t, stored.Priority, tk.Priority)
			require.Equal(t, stored.LastSeq, tk.LastSeq)
			require.JSONEq(t, string(stored.Params), string(tk.Params))
		})
	}
}

// TestCancelInProgressAnswersACommittedTask: under policy
// cancel_in_progress the new task supersedes the holder after its commit;
// the request's time running out there answered an error (503) for a task
// that then ran. Now the task is answered and the holder still cancelled.
func TestCancelInProgressAnswersACommittedTask(t *testing.T) {
	t.Parallel()
	pool := dbtest.DB(t)
	plain := store.New(pool)
	u := testfactory.User(t, plain, "a@acme.test", "acme", auth.RoleDeployer)
	params := func(hash string) store.TaskInsertParams {
		return store.TaskInsertParams{
			TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Kind: task.KindDeploy, Pipeline: "noop",
			Priority: task.PriorityNormal, RequestHash: []byte(hash), Team: "acme", CreatedBy: "a@acme.test",
			ConcurrencyKey: "shop-prod", ConcurrencyPolicy: "cancel_in_progress"}
	}
	holder, _, err := plain.TaskInsert(t.Context(), params("first"))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cfg := pool.Config()
	cfg.ConnConfig.Tracer = &timeRunsOut{after: "INSERT INTO tasks", cancel: cancel}
	traced, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	defer traced.Close()
	tk, created, err := store.New(traced).TaskInsert(ctx, params("second"))
	require.Error(t, ctx.Err(), "the fault did not fall after the commit")
	require.NoError(t, err, "a committed task is answered")
	require.True(t, created)
	_, err = plain.TaskGet(t.Context(), u.TeamIDs(), tk.ID)
	require.NoError(t, err)
	got, err := plain.TaskGet(t.Context(), u.TeamIDs(), holder.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateCancelled, got.State, "the holder is superseded all the same")
}
