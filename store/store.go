// Package store holds all of flightdeck's SQL. It maps rows to the types of
// workflow/task and internal/auth so pgx types never leave this package, and
// turns driver errors into ErrNotFound / ErrConflict.
package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"flightdeck/internal/notify"
)

// Store is the database handle every service shares.
type Store struct {
	pool  *pgxpool.Pool
	wake  *notify.Bus
	names *names
	// folds wakes the rollup fold when this process ends tasks (buffered
	// 1: a wake-up pending is enough).
	folds chan struct{}
}

// New wraps a pool.
func New(pool *pgxpool.Pool) *Store {
	s := &Store{pool: pool, names: &names{}, folds: make(chan struct{}, 1)}
	s.wake = notify.NewBus(s.sendNotifications)
	return s
}

// WithPool is a Store over pool that shares s's wake-ups (a pool woken in
// this process still is) and caches: the web requests' store, whose pool
// bounds every statement (OpenRequests), beside the workers' own.
func (s *Store) WithPool(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, wake: s.wake, names: s.names, folds: s.folds}
}

// Open connects a pool to url. The connect timeout keeps requests answering
// 503 quickly while the database is down instead of hanging.
func Open(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	return open(ctx, url, maxConns, 0)
}

// OpenRequests connects a pool for web requests: the server cancels any
// of its statements that runs longer than statementTimeout (its
// statement_timeout), so a slow query stops in the database too, not
// only in the request that gave up on it. Workers and migrations use
// Open's pool, whose statements are never cut off.
func OpenRequests(ctx context.Context, url string, maxConns int32, statementTimeout time.Duration) (*pgxpool.Pool, error) {
	return open(ctx, url, maxConns, statementTimeout)
}

func open(ctx context.Context, url string, maxConns int32, statementTimeout time.Duration) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("error parsing database URL: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	params := cfg.ConnConfig.RuntimeParams
	if statementTimeout > 0 {
		params["statement_timeout"] = strconv.FormatInt(max(1, statementTimeout.Milliseconds()), 10)
	} else if _, set := params["plan_cache_mode"]; !set {
		// The workers' statements (claim, batched writes, leases) have one
		// shape whatever their arguments: arrays and a limit, walked by
		// the same indexes. Left to choose, PostgreSQL plans the claim
		// afresh at every call (its custom plan for a known LIMIT looks
		// cheaper than the generic one), about 1 ms of CPU each time.
		params["plan_cache_mode"] = "force_generic_plan"
	}
	if _, set := params["jit"]; !set {
		// Short statements only: compiling one (when a generic plan's
		// estimate passes jit_above_cost) costs 100 ms and saves nothing.
		params["jit"] = "off"
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > 5*time.Second {
		cfg.ConnConfig.ConnectTimeout = 3 * time.Second
	}
	cfg.HealthCheckPeriod = 5 * time.Second
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		registerUUIDStrings(conn.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("error opening database pool: %w", err)
	}
	return pool, nil
}

// Pool returns the underlying pool, for wiring (migrations, LISTEN) only.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Ping checks the database answers within ctx.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var one int
	if err := s.pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return interpretError(err)
	}
	return nil
}

// Now is the database's clock: what times a page compares with the tasks'
// created_at must come from, since the web server's clock may differ.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.pool.QueryRow(ctx, "SELECT now()").Scan(&now); err != nil {
		return now, interpretError(err)
	}
	return now.UTC(), nil
}

// withTx runs fn in a transaction, committing when fn returns nil, and
// then sends the wake-ups its writes noted (noteTx).
func (s *Store) withTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return interpretError(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // no-op after commit
	wtx := &wakeTx{Tx: tx}
	if err := fn(wtx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return interpretError(err)
	}
	s.wake.Send(wtx.notes)
	s.foldWake(wtx.notes)
	return nil
}

// querier is what a pool and a transaction have in common, for statements
// that run in either.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
