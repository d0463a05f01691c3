package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Rows are scanned by column name into tagged structs (`db:"…"`). These
// take a Query's two results as they come, so a read is one line:
// oneByName[T](s.pool.Query(ctx, …)).

// byName collects every row into a T.
func byName[T any](rows pgx.Rows, err error) ([]T, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	return out, interpretError(err)
}

// oneByName collects the one row into a T; none is ErrNotFound.
func oneByName[T any](rows pgx.Rows, err error) (*T, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[T])
	if err != nil {
		return nil, interpretError(err)
	}
	return v, nil
}

// execCounting sends a batch of statements that return no rows in tx and
// returns how many rows they changed in all (an outbox's enqueue: rows an
// ON CONFLICT DO NOTHING skipped do not count).
func execCounting(ctx context.Context, tx pgx.Tx, b *pgx.Batch) (int, error) {
	br := tx.SendBatch(ctx, b)
	n := 0
	for range b.Len() {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return 0, interpretError(err)
		}
		n += int(tag.RowsAffected())
	}
	return n, interpretError(br.Close())
}
