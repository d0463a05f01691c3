-- +goose Up
-- The id of the last worker write applied to a task: a write retried after
-- its commit's reply was lost (a restart between commit and reply) finds
-- itself applied and is not applied twice (store.TaskWrite.WriteID).
ALTER TABLE tasks ADD COLUMN last_write uuid;

-- +goose Down
ALTER TABLE tasks DROP COLUMN last_write;
