package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/internal/notify"
)

// rollupCursor names the rollup fold's outbox cursor (migration 00080).
const rollupCursor = "rollups"

// foldedRow is an ended task the fold counts, with the seq it is counted at.
type foldedRow struct {
	endedRow
	EndSeq int `db:"end_seq"`
}

// RollupFolded is what one fold did.
type RollupFolded struct {
	Leader  bool // false: another process held the cursor, nothing was done
	Scanned int  // outbox rows read (limit: there may be more)
	Tasks   int  // ended tasks counted
}

// RollupFoldOnce folds the tasks that ended since the rollup cursor, up to
// limit outbox rows, into the dashboard's derived state: task_rollups,
// task_minutes and deploy_failures (time to restore). It is the one writer
// of that state besides RollupRebuild, out of the write path: the writes
// that end tasks touch no shared row.
//
// The fold and its cursor commit in one transaction, so a fold cut off at
// any point (a crash, a cancelled context, a lost connection) left nothing
// and the next one folds the same tasks once. The cursor row is the
// leader's: it is locked with SKIP LOCKED, so of several serve processes
// one folds at a time and the others skip their turn.
func (s *Store) RollupFoldOnce(ctx context.Context, limit int) (RollupFolded, error) {
	return s.rollupFold(ctx, limit, nil)
}

// rollupFold is RollupFoldOnce; beforeCommit (tests) runs after the fold's
// writes, before its commit.
func (s *Store) rollupFold(ctx context.Context, limit int, beforeCommit func(context.Context) error) (RollupFolded, error) {
	if limit <= 0 {
		limit = 1000
	}
	var res RollupFolded
	var notes notify.Notes
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var cur OutboxPos
		var txid string
		var now time.Time
		err := tx.QueryRow(ctx, `
			SELECT txid::text, task_id::text, seq, now() FROM outbox_cursors WHERE name = $1 FOR UPDATE SKIP LOCKED`,
			rollupCursor).Scan(&txid, &cur.TaskID, &cur.Seq, &now)
		if err == pgx.ErrNoRows {
			return nil // another process folds now
		}
		if err != nil {
			return fmt.Errorf("error reading rollup cursor: %w", interpretError(err))
		}
		res.Leader = true
		if cur.TxID, err = strconv.ParseUint(txid, 10, 64); err != nil {
			return fmt.Errorf("error parsing rollup cursor: %w", err)
		}
		b, err := outboxScan(ctx, tx, cur, nil, limit)
		if err != nil || b.Scanned == 0 {
			return err
		}
		res.Scanned = b.Scanned
		ids, seqs := make([]string, 0, len(b.Events)), make([]int32, 0, len(b.Events))
		for _, e := range b.Events {
			ids, seqs = append(ids, e.TaskID), append(seqs, int32(e.Seq))
		}
		// A task is counted at the first event its ending write stored
		// (invariant 6: the write that ends a task stores its events in
		// the same transaction, so their batch's created_at is the task's
		// finished_at): once, in the fold whose range holds that event.
		rows, err := tx.Query(ctx, `
			SELECT t.id::text AS id, t.team_id::text AS team_id, t.kind, t.pipeline, t.state, t.created_at, t.started_at,
				t.finished_at, t.waited_ms, `+restoreTargetSQL+` AS restore_target, e.seq AS end_seq
			FROM (SELECT DISTINCT id FROM unnest($1::uuid[]) AS id) x
			JOIN tasks t ON t.id = x.id
			CROSS JOIN LATERAL (SELECT min(b.first_seq) AS seq FROM task_event_batches b
				WHERE b.task_id = t.id AND b.created_at = t.finished_at) e
			WHERE t.state IN `+terminalStates+` AND t.finished_at IS NOT NULL
				AND (t.id, e.seq) IN (SELECT * FROM unnest($1::uuid[], $2::int[]))
			ORDER BY t.finished_at, t.id`, ids, seqs)
		if err != nil {
			return interpretError(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByName[foldedRow])
		if err != nil {
			return interpretError(err)
		}
		ended := make([]Ended, len(got))
		for i, r := range got {
			ended[i] = r.ended()
			notes.Events = append(notes.Events, notify.TaskSeq{ID: r.ID, Seq: r.EndSeq})
		}
		// the last day's throughput: tasks folded late still count in the
		// minute they ended, if it is within the day
		if err := taskEndedSince(ctx, tx, ended, now.Add(-24*time.Hour)); err != nil {
			return err
		}
		res.Tasks = len(ended)
		if beforeCommit != nil {
			if err := beforeCommit(ctx); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `
			UPDATE outbox_cursors SET txid = $2::text::xid8, task_id = $3, seq = $4, updated_at = now() WHERE name = $1`,
			rollupCursor, strconv.FormatUint(b.Next.TxID, 10), b.Next.TaskID, b.Next.Seq)
		if err != nil {
			return fmt.Errorf("error advancing rollup cursor: %w", interpretError(err))
		}
		return nil
	})
	if err != nil {
		return RollupFolded{}, err
	}
	// The dashboards re-render on their teams' task changes: the figures
	// of these tasks moved only now.
	s.wake.Send(notes)
	return res, nil
}

// RollupFoldWake is readable when this process ended tasks since the last
// read: the fold runs at once instead of at its next tick.
func (s *Store) RollupFoldWake() <-chan struct{} { return s.folds }

// foldWake wakes the rollup fold after writes that ended tasks committed.
func (s *Store) foldWake(n notify.Notes) {
	if !n.Ended {
		return
	}
	select {
	case s.folds <- struct{}{}:
	default:
	}
}
