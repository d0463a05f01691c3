package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"flightdeck/internal/wake"
)

// Wake-ups go out through one wake.Bus per store, after the commit of the
// writes they announce: a statement on its own sends its notes when it
// returns; a transaction (withTx) collects them in its wakeTx and they are
// sent once it committed.

// Wakeups is the store's bus: a worker pool in the same process subscribes
// to it (OnReady) and skips its own NOTIFYs by its Origin.
func (s *Store) Wakeups() *wake.Bus { return s.wake }

// sendNotifications is the bus's SendFunc: one small statement whose own
// commit need not wait for a disk flush (set_config(…, true) lasts until
// it ends).
func (s *Store) sendNotifications(ctx context.Context, topics, payloads []string) error {
	_, err := s.pool.Exec(ctx, `SELECT set_config('synchronous_commit', 'off', true), count(pg_notify(c, p))
		FROM unnest($1::text[], $2::text[]) AS n(c, p)`, topics, payloads)
	return err
}

// wakeTx is a transaction that collects the wake-ups of its writes, sent
// by withTx after the commit.
type wakeTx struct {
	pgx.Tx
	notes wake.Notes
}

// noteTx adds n to tx's wake-ups (tx is one withTx handed out).
func noteTx(tx pgx.Tx, n wake.Notes) {
	if w, ok := tx.(*wakeTx); ok {
		w.notes.Add(n)
	}
}

func eventsNote(taskID string, seq int) wake.Notes {
	return wake.Notes{Events: []wake.TaskSeq{{ID: taskID, Seq: seq}}}
}

var readyNote = wake.Notes{Ready: true}
