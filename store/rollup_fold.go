package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/internal/notify"
)

// rollupCursor names the rollup fold's outbox cursor (migration 00080).
const rollupCursor = "rollups"

// foldedRow is an ending batch the fold reads: its position, and whether
// its task is one the fold counts (Ends, then the task).
type foldedRow struct {
	TxID      string `db:"txid"`
	BatchTask string `db:"batch_task"`
	BatchLast int    `db:"batch_last"`
	Ends      bool   `db:"ends"`
	endedRow
	EndSeq int `db:"end_seq"`
}

// RollupFolded is what one fold did.
type RollupFolded struct {
	Leader  bool // false: another process held the cursor, nothing was done
	Scanned int  // ending batches read (limit: there may be more)
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
		// One read of the ending batches after the cursor, in the outbox's
		// order (below xmin, as OutboxRead: no batch can later appear
		// behind the cursor), through their partial index: the write that
		// ends a task marks its batch (ends), and stores it in the same
		// transaction as the task's end (invariant 6), so that batch's
		// created_at is the task's finished_at. Batches of other writes are
		// not read at all; the cursor moves to the last ending batch read.
		rows, err := tx.Query(ctx, `
			SELECT b.txid::text AS txid, b.task_id::text AS batch_task, b.last_seq AS batch_last,
				COALESCE(t.finished_at = b.created_at AND t.state IN `+terminalStates+`, false) AS ends,
				COALESCE(t.id::text, '') AS id, COALESCE(t.team_id::text, '') AS team_id, COALESCE(t.kind, '') AS kind,
				COALESCE(t.pipeline, '') AS pipeline, COALESCE(t.state, '') AS state, COALESCE(t.created_at, b.created_at) AS created_at,
				t.started_at, COALESCE(t.finished_at, b.created_at) AS finished_at, COALESCE(t.waited_ms, 0) AS waited_ms,
				`+endedTargetSQL+`, b.first_seq AS end_seq
			FROM (SELECT * FROM task_event_batches
				WHERE ends AND (txid, task_id, last_seq) > ($1::text::xid8, $2::uuid, $3)
					AND txid < pg_snapshot_xmin(pg_current_snapshot())
				ORDER BY txid, task_id, last_seq LIMIT $4) b
			-- joined by id alone, the ending tested above: the tasks' state
			-- statistics are of when they were pending, so a join on their
			-- end state looked empty and the planner scanned the table for
			-- every batch
			LEFT JOIN tasks t ON t.id = b.task_id
			ORDER BY b.txid, b.task_id, b.last_seq`, strconv.FormatUint(cur.TxID, 10), cur.TaskID, cur.Seq, limit)
		if err != nil {
			return interpretError(err)
		}
		batches, err := pgx.CollectRows(rows, pgx.RowToStructByName[foldedRow])
		if err != nil {
			return interpretError(err)
		}
		if len(batches) == 0 {
			return nil
		}
		res.Scanned = len(batches)
		last := batches[len(batches)-1]
		next := OutboxPos{TaskID: last.BatchTask, Seq: last.BatchLast}
		if next.TxID, err = strconv.ParseUint(last.TxID, 10, 64); err != nil {
			return fmt.Errorf("error parsing txid: %w", err)
		}
		var got []foldedRow
		seen := make(map[string]bool, len(batches))
		for _, r := range batches {
			// a task is counted once: one transaction's writes could in
			// principle mark two of its batches
			if r.Ends && !seen[r.ID] {
				seen[r.ID] = true
				got = append(got, r)
			}
		}
		slices.SortFunc(got, func(a, b foldedRow) int { return cmp.Or(a.FinishedAt.Compare(b.FinishedAt), cmp.Compare(a.ID, b.ID)) })
		ended := make([]Ended, len(got))
		woken := map[string]bool{}
		for i, r := range got {
			ended[i] = r.ended()
			// one task per team is wake-up enough: the dashboards re-render
			// by team (a NOTIFY naming every task would cost more than the fold)
			if !woken[r.TeamID] {
				woken[r.TeamID] = true
				notes.Events = append(notes.Events, notify.TaskSeq{ID: r.ID, Seq: r.EndSeq})
			}
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
			rollupCursor, strconv.FormatUint(next.TxID, 10), next.TaskID, next.Seq)
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
