-- +goose Up
-- Every index on tasks costs the queue's hot path: a claim and a finish
-- change indexed columns, so each writes a new entry into every index whose
-- predicate the row satisfies. These two are served by
-- tasks_team_id_state_created_at_idx (team_id, state, …): the pending bound
-- counts (team_id, 'pending') and the dashboard reads the unfinished states
-- by name. One index entry fewer per submit and per claim.
DROP INDEX tasks_team_id_pending_idx;
DROP INDEX tasks_team_id_active_idx;

-- +goose Down
CREATE INDEX tasks_team_id_pending_idx ON tasks (team_id) WHERE state = 'pending';
CREATE INDEX tasks_team_id_active_idx ON tasks (team_id, state, priority, created_at)
    WHERE state NOT IN ('completed', 'failed', 'cancelled');
