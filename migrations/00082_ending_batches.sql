-- +goose Up
-- The rollup fold reads only the writes that end tasks (issue 34, item 3).
-- It walked every event batch after its cursor (about five per 3-step task)
-- and joined each to its task to find the one ending batch: most of the
-- fold's cost, paid by every task. The write that sets finished_at marks
-- its batch, and a partial index holds only those: one entry per task,
-- which the fold walks in outbox order. Adding a column with a constant
-- default rewrites nothing.
ALTER TABLE task_event_batches ADD COLUMN ends boolean NOT NULL DEFAULT false;

-- Tasks that ended after the fold's cursor but before this migration are
-- still the fold's to count: mark their ending batches as the write would
-- have.
UPDATE task_event_batches b SET ends = true
FROM tasks t, outbox_cursors c
WHERE c.name = 'rollups' AND (b.txid, b.task_id, b.last_seq) > (c.txid, c.task_id, c.seq)
    AND t.id = b.task_id AND t.finished_at = b.created_at
    AND t.state IN ('completed', 'failed', 'cancelled')
    AND b.first_seq = (SELECT min(first_seq) FROM task_event_batches e
        WHERE e.task_id = t.id AND e.created_at = t.finished_at);

CREATE INDEX task_event_batches_ends_idx ON task_event_batches (txid, task_id, last_seq) WHERE ends;

-- +goose Down
DROP INDEX task_event_batches_ends_idx;
ALTER TABLE task_event_batches DROP COLUMN ends;
