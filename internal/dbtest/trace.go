package dbtest

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Statement is one statement a traced pool sent.
type Statement struct {
	SQL  string
	Args []any
}

// Statements records what a traced pool sends (pgx's query and batch
// tracer), for tests that count the round trips of a page or a store
// method: the statements are the server's, not a mock's.
type Statements struct {
	mu   sync.Mutex
	list []Statement
}

// Traced returns a second pool on pool's database, configured alike, whose
// statements are recorded. The test keeps writing its fixtures through
// pool, so only what it hands the traced pool is counted.
func Traced(t testing.TB, pool *pgxpool.Pool) (*pgxpool.Pool, *Statements) {
	t.Helper()
	rec := &Statements{}
	cfg := pool.Config()
	cfg.ConnConfig.Tracer = rec
	traced, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatalf("error opening traced pool: %v", err)
	}
	t.Cleanup(traced.Close)
	return traced, rec
}

// Take returns the statements recorded since the last Take, oldest first.
func (s *Statements) Take() []Statement {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.list
	s.list = nil
	return out
}

func (s *Statements) add(sql string, args []any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, Statement{SQL: sql, Args: args})
}

// TraceQueryStart records a statement (Query, QueryRow, Exec).
func (s *Statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	s.add(data.SQL, data.Args)
	return ctx
}

// TraceQueryEnd is part of pgx.QueryTracer.
func (s *Statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart is part of pgx.BatchTracer.
func (s *Statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery records each statement of a batch.
func (s *Statements) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	s.add(data.SQL, data.Args)
}

// TraceBatchEnd is part of pgx.BatchTracer.
func (s *Statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
