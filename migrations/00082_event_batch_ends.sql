-- +goose Up
-- The batch a task's ending write stored is marked (ends), and a partial
-- index in the outbox's order holds only those: the rollup fold walks one
-- entry per ended task instead of every batch of every task. Tasks that
-- ended before this migration were counted by the writes that ended them
-- (the fold's cursor, 00080, starts at this release's migration).
ALTER TABLE task_event_batches ADD COLUMN ends boolean NOT NULL DEFAULT false;
CREATE INDEX task_event_batches_ends_idx ON task_event_batches (txid, task_id, last_seq) WHERE ends;

-- +goose Down
DROP INDEX task_event_batches_ends_idx;
ALTER TABLE task_event_batches DROP COLUMN ends;
