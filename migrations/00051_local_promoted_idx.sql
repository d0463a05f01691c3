-- +goose NO TRANSACTION
-- +goose Up
-- The local provider stops an instance a promoted canary replaced once the
-- promoting task completed; it finds the promotions by the instance they
-- replaced. Built concurrently: local_effects may be large.
CREATE INDEX CONCURRENTLY IF NOT EXISTS local_effects_replaced_idx
    ON local_effects ((output->>'previous_current_id'))
    WHERE action = 'local.traffic_shift';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS local_effects_replaced_idx;
