package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"flightdeck/internal/notify"
)

// Wake-ups go out through one notify.Bus per store, after the commit of the
// writes they announce: a statement on its own sends its notes when it
// returns; a transaction (withTx) collects them in its wakeTx and they are
// sent once it committed.

// Wakeups is the store's bus: a worker pool in the same process subscribes
// to it (OnReady) and skips its own NOTIFYs by its Origin.
func (s *Store) Wakeups() *notify.Bus { return s.wake }

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
	notes notify.Notes
}

// noteTx adds n to tx's wake-ups (tx is one withTx handed out).
func noteTx(tx pgx.Tx, n notify.Notes) {
	if w, ok := tx.(*wakeTx); ok {
		w.notes.Add(n)
	}
}

func eventsNote(taskID string, seq int) notify.Notes {
	return notify.Notes{Events: []notify.TaskSeq{{ID: taskID, Seq: seq}}}
}

var readyNote = notify.Notes{Ready: true}

// ListenConn opens a connection of its own to the store's database, named
// applicationName in pg_stat_activity, for notify.Listen. pgx stays here:
// package notify sees only its Conn interface.
func (s *Store) ListenConn(ctx context.Context, applicationName string) (notify.Conn, error) {
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = applicationName
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return listenConn{c}, nil
}

// listenConn is a pgx connection as notify.Conn.
type listenConn struct{ c *pgx.Conn }

func (l listenConn) Listen(ctx context.Context, channel string) error {
	_, err := l.c.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize())
	return err
}

func (l listenConn) WaitForNotification(ctx context.Context) (notify.Notification, error) {
	n, err := l.c.WaitForNotification(ctx)
	if err != nil {
		return notify.Notification{}, err
	}
	return notify.Notification{Channel: n.Channel, Payload: n.Payload}, nil
}

func (l listenConn) Ping(ctx context.Context) error  { return l.c.Ping(ctx) }
func (l listenConn) IsClosed() bool                  { return l.c.PgConn().IsClosed() }
func (l listenConn) Close(ctx context.Context) error { return l.c.Close(ctx) }
