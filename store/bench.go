package store

import "context"

// TaskCountUnfinished counts tasks among ids that have not ended.
func (s *Store) TaskCountUnfinished(ctx context.Context, ids []string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE id = ANY($1) AND finished_at IS NULL`, ids).Scan(&n)
	return n, interpretError(err)
}

// Latency holds percentiles in milliseconds, measured with the database
// clock on both ends (created_at, started_at, finished_at).
type Latency struct {
	ClaimP50, ClaimP99, DoneP99 float64
}

// TaskLatency measures insert→claim and insert→done over ids.
func (s *Store) TaskLatency(ctx context.Context, ids []string) (Latency, error) {
	var l Latency
	err := s.pool.QueryRow(ctx, `
		SELECT
			COALESCE(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - created_at)), 0) * 1000,
			COALESCE(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - created_at)), 0) * 1000,
			COALESCE(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)), 0) * 1000
		FROM tasks WHERE id = ANY($1) AND started_at IS NOT NULL`, ids).Scan(&l.ClaimP50, &l.ClaimP99, &l.DoneP99)
	return l, interpretError(err)
}
