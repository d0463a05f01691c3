package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
)

// livenessNamespace is the first key of every worker's liveness lock
// (pg_advisory_lock(int, int)), so the locks are told apart from any other
// advisory lock (migrations use their own).
const livenessNamespace = 6712420

// Liveness is a worker process's hold on its liveness lock: a session-level
// advisory lock on a connection taken out of the pool, held until Close or
// until the process dies, which ends the session and frees the lock. A
// rescuer that finds a registered worker without its lock knows the
// process is gone (TaskRescueDead).
type Liveness struct {
	conn *pgx.Conn
	key  int32
}

// WorkerHold takes a new liveness lock for a worker. Register the worker
// with the returned hold's Key after this, so no rescuer can see the key
// before it is held.
func (s *Store) WorkerHold(ctx context.Context) (*Liveness, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("error taking a connection for the liveness lock: %w", interpretError(err))
	}
	// Out of the pool for good: the lock lives as long as this session.
	conn := pc.Hijack()
	for range 10 {
		key := rand.Int32()
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, livenessNamespace, key).Scan(&ok); err != nil {
			_ = conn.Close(ctx)
			return nil, fmt.Errorf("error taking the liveness lock: %w", interpretError(err))
		}
		if ok {
			return &Liveness{conn: conn, key: key}, nil
		}
	}
	_ = conn.Close(ctx)
	return nil, fmt.Errorf("error taking the liveness lock: no free key")
}

// Key is the lock's key, as WorkerRegister records it.
func (l *Liveness) Key() int32 { return l.key }

// Alive reports whether the lock's session still answers (a database
// restart ends it; the worker then takes a new hold).
func (l *Liveness) Alive(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return l.conn.Ping(ctx) == nil
}

// Close ends the session, and with it the lock.
func (l *Liveness) Close(ctx context.Context) error { return l.conn.Close(ctx) }

// WorkerSetLock records the liveness lock a registered worker holds now
// (after a database restart took the old one).
func (s *Store) WorkerSetLock(ctx context.Context, id string, key int32) error {
	_, err := s.pool.Exec(ctx, `UPDATE workers SET lock_key = $2, heartbeat_at = now() WHERE id = $1`, id, key)
	return interpretError(err)
}

// TaskRescueDead finds up to limit tasks leased to a worker other than
// self whose process is gone (it is registered with a liveness lock that
// nobody holds) and applies what decide makes of each, as TaskRescue does
// for an expired lease. Right after the database server started, every
// session is new and the workers are still taking their locks again: for
// grace (a lease) only the lease's expiry counts.
func (s *Store) TaskRescueDead(ctx context.Context, self string, grace time.Duration, limit int, decide func(Stale) TaskWrite) (int, error) {
	return s.sweep(ctx, `
		WITH dead AS (
			SELECT w.id FROM workers w
			WHERE w.lock_key IS NOT NULL AND w.id <> $2
				AND pg_postmaster_start_time() < now() - make_interval(secs => $3)
				AND NOT EXISTS (
					SELECT 1 FROM pg_locks l
					WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
						AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
						AND l.classid = $4::int::oid AND l.objid = w.lock_key::oid)
		)
		-- every leased task has an expiry: tasks_lease_expires_at_idx holds
		-- just the leased ones, a few per worker slot (an index of its own
		-- on lease_owner would cost every claim one more index entry)
		SELECT id, COALESCE(lease_token::text, '') AS token, state, attempt, max_attempts FROM tasks
		WHERE lease_expires_at IS NOT NULL AND lease_owner IN (SELECT id FROM dead) AND lease_token IS NOT NULL
		ORDER BY id
		LIMIT $1
		FOR UPDATE SKIP LOCKED`, limit, decide, self, grace.Seconds(), livenessNamespace)
}
