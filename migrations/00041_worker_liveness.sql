-- +goose Up
-- A worker process holds a session-level advisory lock (namespace 6712420,
-- key lock_key) on a connection of its own for as long as it lives: when
-- the process dies, its connection and the lock go with it, so any
-- rescuer sees the death at once instead of waiting out the lease
-- (store.TaskRescueDead).
ALTER TABLE workers ADD COLUMN lock_key integer;

-- +goose Down
ALTER TABLE workers DROP COLUMN lock_key;
