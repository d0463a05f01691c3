package store

import "context"

// EncodeEvents is the Go encoder of stored events, for tests that compare
// the SQL side of the codec with it.
var EncodeEvents = encodeEvents

// RollupFoldHook is RollupFoldOnce with beforeCommit run after the fold's
// writes and before its commit (a test cuts the fold off there).
func (s *Store) RollupFoldHook(ctx context.Context, limit int, beforeCommit func(context.Context) error) (RollupFolded, error) {
	return s.rollupFold(ctx, limit, beforeCommit)
}

// RollupBehind counts the ending batches (the fold reads no other) past
// the rollup fold's cursor.
func (s *Store) RollupBehind(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		SELECT count(*) FROM task_event_batches b, outbox_cursors c
		WHERE c.name = $1 AND b.ends AND (b.txid, b.task_id, b.last_seq) > (c.txid, c.task_id, c.seq)`, rollupCursor).Scan(&n)
	return n, err
}
