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
-- The effects are read by age; each names its task, so the prune asks the
-- task (by primary key) whether it may still run, with no index on the
-- queue's busy task_steps.
CREATE INDEX CONCURRENTLY IF NOT EXISTS local_effects_created_at_idx ON local_effects (created_at);

-- Effects recorded before this migration have none and are kept.
ALTER TABLE local_effects ADD COLUMN IF NOT EXISTS task_id uuid;

-- +goose Down
ALTER TABLE local_effects DROP COLUMN IF EXISTS task_id;
DROP INDEX CONCURRENTLY IF EXISTS local_effects_created_at_idx;
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_ended_idx;
