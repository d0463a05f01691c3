-- +goose Up
-- An environment's approval sat at step_idx 0, the same (task, step,
-- attempt) as step 0's own approval: step 0's approval read the
-- reviewers' as its own, whatever its roles, and could not be recorded
-- beside it. The reviewers decide before every step: -1.
UPDATE approvals SET step_idx = -1 WHERE kind = 'environment';

-- +goose Down
UPDATE approvals SET step_idx = 0 WHERE kind = 'environment';
