-- +goose Up
-- An approval still pending when its task is cancelled is 'cancelled', not
-- 'expired': nobody let it run out, a person called the task off.
ALTER TABLE approvals DROP CONSTRAINT approvals_state_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_state_check
    CHECK (state IN ('pending', 'approved', 'rejected', 'expired', 'cancelled'));

-- +goose Down
UPDATE approvals SET state = 'expired' WHERE state = 'cancelled';
ALTER TABLE approvals DROP CONSTRAINT approvals_state_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_state_check
    CHECK (state IN ('pending', 'approved', 'rejected', 'expired'));
