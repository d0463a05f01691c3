-- +goose Up
-- A worker process holds a session-level advisory lock (namespace 6712420,
-- key lock_key) on a connection of its own for as long as it lives: when
-- the process dies, its connection and the lock go with it, so any
-- rescuer sees the death at once instead of waiting out the lease
-- (store.TaskRescueDead).
ALTER TABLE workers ADD COLUMN lock_key integer;
-- the rescuer finds a dead worker's tasks by their lease owner
CREATE INDEX tasks_lease_owner_idx ON tasks (lease_owner) WHERE lease_owner IS NOT NULL;

-- +goose Down
DROP INDEX tasks_lease_owner_idx;
ALTER TABLE workers DROP COLUMN lock_key;
