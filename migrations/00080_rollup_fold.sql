-- +goose Up
-- Derived state leaves the write path (issue 34, item 3). The dashboard's
-- rollups, per-minute counts and time to restore are folded by one
-- maintenance loop from the outbox (task_event_batches) through this
-- cursor; the fold and the cursor commit together, so a fold cut off
-- mid-batch is redone whole. It starts at the current xmin: tasks that ended
-- before it were counted by the writes that ended them.
INSERT INTO outbox_cursors (name, txid, task_id, seq)
VALUES ('rollups', pg_snapshot_xmin(pg_current_snapshot()), '00000000-0000-0000-0000-000000000000', 0)
ON CONFLICT (name) DO NOTHING;

-- A target's current and previous deploy are read from the tasks through
-- tasks_team_id_target_key_completed_idx (the last completed deploy, and
-- the last one before it whose params differ), never kept beside them: the
-- write that ends a deploy touches no shared row, and promotion, rollback
-- and protection decide on what the tasks say.
ALTER TABLE environments DROP COLUMN current_task_id, DROP COLUMN previous_task_id;

-- +goose Down
ALTER TABLE environments ADD COLUMN current_task_id uuid, ADD COLUMN previous_task_id uuid;
DELETE FROM outbox_cursors WHERE name = 'rollups';
