package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/workflow/task"
)

// OutboxPos is a position in the outbox (task_events) in commit-safe order:
// the writing transaction's id, then task and seq.
type OutboxPos struct {
	TxID   uint64
	TaskID string
	Seq    int
}

// after reports whether p comes after q in the outbox's order. Task ids
// compare as PostgreSQL compares uuids: byte by byte, which for their
// canonical lower-case text is the text order.
func (p OutboxPos) after(q OutboxPos) bool {
	if p.TxID != q.TxID {
		return p.TxID > q.TxID
	}
	if p.TaskID != q.TaskID {
		return p.TaskID > q.TaskID
	}
	return p.Seq > q.Seq
}

// OutboxEvent is an event read from the outbox with its task's team.
type OutboxEvent struct {
	task.Event
	TeamID string
	Pos    OutboxPos
}

const zeroUUID = "00000000-0000-0000-0000-000000000000"

// OutboxBatch is one read of the outbox.
type OutboxBatch struct {
	Events  []OutboxEvent // the rows of wanted types
	Next    OutboxPos     // where the cursor goes once Events are handled
	Scanned int           // rows read, wanted or not; 0 means nothing new
}

// OutboxRead reads up to limit rows after consumer name's cursor and returns
// those whose type is one of types (all when empty) with the position to
// advance the cursor to after handling them, which may lie past the last
// returned event: rows of other types are stepped over, never rescanned.
//
// Only rows written by transactions older than the oldest transaction still
// running are read. Transaction ids are assigned in start order, not commit
// order, so a newer row may commit before an older one; reading only below
// the snapshot's xmin means no row can later appear behind the cursor (no
// event lost) and no uncommitted row is ever seen (nothing published that
// did not happen). The price: a long-running write transaction anywhere in
// the cluster delays delivery until it ends.
//
// A consumer without a cursor starts at the current xmin: it sees what is
// committed from then on.
func (s *Store) OutboxRead(ctx context.Context, name string, types []string, limit int) (OutboxBatch, error) {
	if limit <= 0 {
		limit = 500
	}
	var cur OutboxPos
	var txid string
	// Read first: polling must not write. The first read of a new consumer
	// creates its cursor.
	const get = `SELECT txid::text, task_id::text, seq FROM outbox_cursors WHERE name = $1`
	err := s.pool.QueryRow(ctx, get, name).Scan(&txid, &cur.TaskID, &cur.Seq)
	if err == pgx.ErrNoRows {
		if _, err = s.pool.Exec(ctx, `
			INSERT INTO outbox_cursors (name, txid, task_id, seq)
			VALUES ($1, pg_snapshot_xmin(pg_current_snapshot()), $2, 0)
			ON CONFLICT (name) DO NOTHING`, name, zeroUUID); err == nil {
			err = s.pool.QueryRow(ctx, get, name).Scan(&txid, &cur.TaskID, &cur.Seq)
		}
	}
	if err != nil {
		return OutboxBatch{}, fmt.Errorf("error reading outbox cursor: %w", interpretError(err))
	}
	if cur.TxID, err = strconv.ParseUint(txid, 10, 64); err != nil {
		return OutboxBatch{}, fmt.Errorf("error parsing outbox cursor: %w", err)
	}
	return outboxScan(ctx, s.pool, cur, types, limit)
}

// outboxScan reads up to limit rows after cur (OutboxRead), on a pool or in
// a transaction.
func outboxScan(ctx context.Context, q rowsQuerier, cur OutboxPos, types []string, limit int) (OutboxBatch, error) {
	// The read walks task_event_batches_txid_idx in order. Each batch holds
	// at least one event, so limit batches hold enough; the first may hold
	// events at or before the cursor (a read that stopped inside it).
	rows, err := q.Query(ctx, `
		SELECT b.txid::text, b.task_id::text, b.first_seq, b.created_at, b.events, t.team_id::text
		FROM task_event_batches b JOIN tasks t ON t.id = b.task_id
		WHERE (b.txid, b.task_id, b.last_seq) > ($1::text::xid8, $2::uuid, $3)
		  AND b.txid < pg_snapshot_xmin(pg_current_snapshot())
		ORDER BY b.txid, b.task_id, b.last_seq
		LIMIT $4`, strconv.FormatUint(cur.TxID, 10), cur.TaskID, cur.Seq, limit)
	if err != nil {
		return OutboxBatch{}, fmt.Errorf("error reading outbox: %w", interpretError(err))
	}
	defer rows.Close()
	wanted := func(t task.EventType) bool { return len(types) == 0 || slices.Contains(types, string(t)) }
	var out []OutboxEvent
	next, scanned := cur, 0
	for rows.Next() {
		var txt, taskID, teamID string
		var first int
		var at time.Time
		var raw []byte
		if err := rows.Scan(&txt, &taskID, &first, &at, &raw, &teamID); err != nil {
			return OutboxBatch{}, interpretError(err)
		}
		txid, err := strconv.ParseUint(txt, 10, 64)
		if err != nil {
			return OutboxBatch{}, fmt.Errorf("error parsing txid: %w", err)
		}
		events, err := decodeEvents(taskID, first, at, raw)
		if err != nil {
			return OutboxBatch{}, err
		}
		for _, e := range events {
			pos := OutboxPos{TxID: txid, TaskID: taskID, Seq: e.Seq}
			if scanned == limit || !pos.after(cur) {
				continue
			}
			next = pos
			scanned++
			if wanted(e.Type) {
				out = append(out, OutboxEvent{Event: e, TeamID: teamID, Pos: pos})
			}
		}
	}
	if err := rows.Err(); err != nil {
		return OutboxBatch{}, interpretError(err)
	}
	return OutboxBatch{Events: out, Next: next, Scanned: scanned}, nil
}

// OutboxAdvance moves consumer name's cursor forward to pos. It never moves
// it back, so two processes handling the same batch (consumers must be
// idempotent) cannot undo each other's progress.
func (s *Store) OutboxAdvance(ctx context.Context, name string, pos OutboxPos) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE outbox_cursors SET txid = $2::text::xid8, task_id = $3, seq = $4, updated_at = now()
		WHERE name = $1 AND (txid, task_id, seq) < ($2::text::xid8, $3::uuid, $4)`,
		name, strconv.FormatUint(pos.TxID, 10), pos.TaskID, pos.Seq)
	if err != nil {
		return fmt.Errorf("error advancing outbox cursor: %w", interpretError(err))
	}
	return nil
}
