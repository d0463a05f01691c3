-- +goose NO TRANSACTION
-- +goose Up
-- Retention (workflow/retention) deletes ended webhook deliveries and the
-- local provider's effect records of long-ended tasks in small batches.
-- Built concurrently: task_steps and webhook_deliveries may be large, and
-- a plain CREATE INDEX would block their writes meanwhile.

-- Ended deliveries by the time they ended: the prune's range.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_ended_idx
    ON webhook_deliveries ((COALESCE(delivered_at, last_attempt_at, created_at)))
    WHERE state <> 'pending';
-- The prune asks, per effect, whether a task that may still run holds its
-- key; the effects themselves are read by age.
CREATE INDEX CONCURRENTLY IF NOT EXISTS task_steps_idempotency_key_idx ON task_steps (idempotency_key);
CREATE INDEX CONCURRENTLY IF NOT EXISTS local_effects_created_at_idx ON local_effects (created_at);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS local_effects_created_at_idx;
DROP INDEX CONCURRENTLY IF EXISTS task_steps_idempotency_key_idx;
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_ended_idx;
