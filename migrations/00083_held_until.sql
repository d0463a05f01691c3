-- +goose Up
-- A task a freeze holds keeps its run_at (issue 38, item 6): the hold used
-- to move run_after to the freeze's end, so the task's JSON showed the end
-- as the time it was asked to run, and the claim that found it frozen left
-- it a started_at. Now the hold is its own column: a scheduled task
-- becomes pending at the later of run_after and held_until, and the write
-- that holds it clears started_at (it started no step).
ALTER TABLE tasks ADD COLUMN held_until timestamptz;

-- Tasks held before this migration: their run_after is the freeze's end,
-- which is the later of the two as before.
CREATE INDEX tasks_scheduled_due_idx ON tasks (GREATEST(run_after, held_until)) WHERE state = 'scheduled';
DROP INDEX tasks_run_after_idx;

-- +goose Down
CREATE INDEX tasks_run_after_idx ON tasks (run_after) WHERE state = 'scheduled';
DROP INDEX tasks_scheduled_due_idx;
ALTER TABLE tasks DROP COLUMN held_until;
