-- +goose Up
-- Tracing (contract §8): the W3C traceparent of the request that submitted
-- a task, so each run of it (a trace of its own) links back to the submit.
-- NULL when tracing was off or the task came from elsewhere (bulk inserts).
-- Nullable without a default: adding it rewrites nothing.
ALTER TABLE tasks ADD COLUMN traceparent text;

-- +goose Down
ALTER TABLE tasks DROP COLUMN traceparent;
