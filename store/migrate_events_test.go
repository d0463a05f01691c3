package store_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/dbtest"
	"flightdeck/migrations"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// TestEventBatchMigrationKeepsEvents: events stored one row each (before
// 00012) read the same after it (values, seqs, times, outbox order), and
// migrating down brings the rows back.
func TestEventBatchMigrationKeepsEvents(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := databaseAt(t, 11)
	taskID := oldTask(t, pool, 3)
	_, err := pool.Exec(ctx, `
		INSERT INTO task_events (task_id, seq, type, status, step, total_step, step_name, tool, message, data, created_at, txid) VALUES
		($1, 1, 'task.state', 'log', 0, 0, '', '', 'Task submitted', '{"state":"pending"}', '2026-01-02T03:04:05Z', NULL),
		($1, 2, 'step.started', 'tool_call', 1, 2, 'build', 'exec', '', '{}', '2026-01-02T03:04:06Z', '12345'),
		($1, 3, 'step.log', 'log', 1, 2, 'build', '', 'a "quoted" line', '{"a":null,"b":[1]}', '2026-01-02T03:04:07Z', '12346')`, taskID)
	require.NoError(t, err)

	require.NoError(t, store.New(pool).Migrate(ctx, nil))
	evs, err := store.New(pool).EventsAfter(ctx, taskID, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	require.Equal(t, task.Event{TaskID: taskID, Seq: 2, Type: task.EventStepStarted, Status: task.StatusToolCall, Step: 1, TotalStep: 2,
		StepName: "build", Tool: "exec", Data: []byte(`{}`), Time: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC)}, evs[1])
	require.Equal(t, `a "quoted" line`, evs[2].Message)
	require.JSONEq(t, `{"a":null,"b":[1]}`, string(evs[2].Data))
	require.JSONEq(t, `{"state":"pending"}`, string(evs[0].Data))
	txids := dbtest.Strings(t, pool, `SELECT txid::text FROM task_event_batches WHERE task_id = $1 ORDER BY last_seq`, taskID)
	require.Equal(t, []string{"0", "12345", "12346"}, txids, "outbox positions kept; none (0) stays behind every cursor")

	_, err = p.DownTo(ctx, 11)
	require.NoError(t, err)
	var n int
	var msg string
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), max(message) FILTER (WHERE seq = 3) FROM task_events WHERE task_id = $1`, taskID).Scan(&n, &msg))
	require.Equal(t, 3, n)
	require.Equal(t, `a "quoted" line`, msg)
}

// TestEventTextMigrationKeepsEvents: batches stored as json objects (00012
// to 00014) read the same after 00015 stores them positionally as text,
// through the store and through the task_events view, and migrating down
// brings the objects back.
func TestEventTextMigrationKeepsEvents(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := databaseAt(t, 14)
	taskID := oldTask(t, pool, 4)
	_, err := pool.Exec(ctx, `
		INSERT INTO task_event_batches (task_id, first_seq, last_seq, events, created_at) VALUES
		($1, 1, 1, '[{"type":"task.state","status":"log","message":"Task submitted","data":{"state":"pending"}}]', '2026-01-02T03:04:05Z'),
		($1, 2, 4, '[{"type":"step.started","status":"tool_call","step":1,"total_step":2,"step_name":"build","tool":"exec"},
			{"type":"step.log","status":"log","step":1,"total_step":2,"step_name":"build","message":"a \"quoted\" line ü","data":{"a":null,"b":[1]}},
			{"type":"task.state","status":"log"}]', '2026-01-02T03:04:06Z')`, taskID)
	require.NoError(t, err)
	viewRows := func() []string {
		return dbtest.Strings(t, pool, `SELECT row(seq, type, status, step, total_step, step_name, tool, message, data, created_at)::text
			FROM task_events WHERE task_id = $1 ORDER BY seq`, taskID)
	}
	before := viewRows()
	require.Len(t, before, 4)

	require.NoError(t, store.New(pool).Migrate(ctx, nil))
	require.Equal(t, before, viewRows())
	evs, err := store.New(pool).EventsAfter(ctx, taskID, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 4)
	require.Equal(t, task.Event{TaskID: taskID, Seq: 2, Type: task.EventStepStarted, Status: task.StatusToolCall, Step: 1, TotalStep: 2,
		StepName: "build", Tool: "exec", Data: []byte(`{}`), Time: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC)}, evs[1])
	require.Equal(t, `a "quoted" line ü`, evs[2].Message)
	require.JSONEq(t, `{"a":null,"b":[1]}`, string(evs[2].Data))
	require.Equal(t, task.Event{TaskID: taskID, Seq: 4, Type: task.EventTaskState, Status: task.StatusLog, Data: []byte(`{}`),
		Time: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC)}, evs[3])

	_, err = p.DownTo(ctx, 14)
	require.NoError(t, err)
	require.Equal(t, before, viewRows())
	var typ string
	require.NoError(t, pool.QueryRow(ctx, `SELECT json_typeof(events->0) FROM task_event_batches WHERE task_id = $1 AND first_seq = 2`, taskID).Scan(&typ))
	require.Equal(t, "object", typ)
}

// databaseAt is a fresh database migrated up to version, with the provider
// that moves it on.
func databaseAt(t *testing.T, version int64) (*pgxpool.Pool, *goose.Provider) {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), unmigratedDatabase(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	require.NoError(t, err)
	_, err = p.UpTo(t.Context(), version)
	require.NoError(t, err)
	return pool, p
}

// oldTask inserts a task (with its team and user) by hand, as an older
// schema holds it, whose last_seq is lastSeq.
func oldTask(t *testing.T, pool *pgxpool.Pool, lastSeq int) string {
	t.Helper()
	var id string
	require.NoError(t, pool.QueryRow(t.Context(), `
		WITH tm AS (INSERT INTO teams (name) VALUES ('acme') RETURNING id),
		u AS (INSERT INTO users (email, password_hash) VALUES ('old@acme.test', 'x') RETURNING id)
		INSERT INTO tasks (team_id, created_by, kind, pipeline, last_seq)
		SELECT tm.id, u.id, 'deploy', 'noop', $1 FROM tm, u RETURNING id`, lastSeq).Scan(&id))
	return id
}

// TestEventJSONBMigrationKeepsEvents: 00017 turns the positional text form
// into keyed jsonb (and the keyed rows the deadline sweep wrote into the
// positional table stay as they are), and back.
func TestEventJSONBMigrationKeepsEvents(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := databaseAt(t, 16)
	taskID := oldTask(t, pool, 3)
	_, err := pool.Exec(ctx, `
		INSERT INTO task_event_batches (task_id, first_seq, last_seq, events, created_at) VALUES
		($1, 1, 2, '[["task.state","log","Task submitted",{"state":"pending"}],["step.log","log","a \"line\"",{},1,2,"build"]]', '2026-01-02T03:04:05Z'),
		($1, 3, 3, '[{"type":"task.failed","status":"error","message":"Task failed: deadline passed before it started","data":{"state":"failed"}}]', '2026-01-02T03:04:06Z')`, taskID)
	require.NoError(t, err)

	require.NoError(t, store.New(pool).Migrate(ctx, nil))
	evs, err := store.New(pool).EventsAfter(ctx, taskID, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	require.JSONEq(t, `{"state":"pending"}`, string(evs[0].Data))
	require.Equal(t, task.Event{TaskID: taskID, Seq: 2, Type: task.EventStepLog, Status: task.StatusLog, Step: 1, TotalStep: 2,
		StepName: "build", Message: `a "line"`, Data: []byte(`{}`), Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, evs[1])
	require.Equal(t, task.EventTaskFailed, evs[2].Type, "a row already keyed is kept")
	require.Equal(t, []string{"task.state", "step.log", "task.failed"},
		dbtest.Strings(t, pool, `SELECT type FROM task_events WHERE task_id = $1 ORDER BY seq`, taskID))

	_, err = p.DownTo(ctx, 16)
	require.NoError(t, err)
	require.Equal(t, []string{"task.state", "step.log", "task.failed"},
		dbtest.Strings(t, pool, `SELECT type FROM task_events WHERE task_id = $1 ORDER BY seq`, taskID))
}
