-- +goose Up
-- The rescuer's sweep for cancels a person asked for while a worker held
-- the task, which the worker parked instead of acting on
-- (store.TaskCancelStanding): a small index of exactly those rows.
CREATE INDEX tasks_cancel_standing_idx ON tasks (id)
    WHERE cancel_requested_at IS NOT NULL AND lease_token IS NULL
        AND state IN ('pending', 'scheduled', 'paused', 'awaiting_approval', 'awaiting_input');

-- +goose Down
DROP INDEX tasks_cancel_standing_idx;
