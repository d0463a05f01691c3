-- +goose Up
-- Run control (contract §10): a task may rest paused, holding no worker.
-- pause_requested_at: a person asked a running task to pause; its worker
-- parks it once the step (or group) it is in ends, and the request
-- survives the worker (a task handed back or rescued with it set parks as
-- soon as it is claimed). failed_step and decision_expires_at: a step that
-- failed under on_failure: ask waits for a decision until then; the
-- maintenance loop rolls back what is undecided (store.TaskDecisionExpire).
ALTER TABLE tasks DROP CONSTRAINT tasks_state_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_state_check CHECK (state IN (
    'pending', 'scheduled', 'running', 'awaiting_approval', 'awaiting_input', 'paused',
    'compensating', 'needs_attention', 'completed', 'failed', 'cancelled'));
ALTER TABLE tasks
    ADD COLUMN pause_requested_at timestamptz,
    ADD COLUMN failed_step jsonb,
    ADD COLUMN decision_expires_at timestamptz;
CREATE INDEX tasks_decision_expires_at_idx ON tasks (decision_expires_at)
    WHERE state = 'paused' AND decision_expires_at IS NOT NULL;

-- +goose Down
DROP INDEX tasks_decision_expires_at_idx;
ALTER TABLE tasks DROP COLUMN decision_expires_at, DROP COLUMN failed_step, DROP COLUMN pause_requested_at;
ALTER TABLE tasks DROP CONSTRAINT tasks_state_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_state_check CHECK (state IN (
    'pending', 'scheduled', 'running', 'awaiting_approval', 'awaiting_input',
    'compensating', 'needs_attention', 'completed', 'failed', 'cancelled'));
