-- +goose Up
-- A deploy's secret parameters are kept apart from the ones people see:
-- tasks.params holds the public params, with "[REDACTED]" standing in for
-- each secret one that was set, and secret_params their real values, read
-- only by the worker holding the task's lease (TaskClaim merges them in)
-- and by TaskSecretParams. Tasks stored before this migration have none
-- (NULL) and keep their params as they were. Nullable without a default:
-- adding it rewrites nothing.
ALTER TABLE tasks ADD COLUMN secret_params jsonb;

-- +goose Down
ALTER TABLE tasks DROP COLUMN secret_params;
