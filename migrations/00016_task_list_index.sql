-- +goose Up
-- The task list reads each team and state apart from
-- tasks_team_id_state_created_at_idx and merges the pieces (store.TaskList).
-- This index served nothing else: its "team_id = ANY(…)" scan could not
-- return rows in time order, so the list sorted the teams' whole history
-- anyway. Every claim and finish wrote an entry into it.
DROP INDEX tasks_team_id_created_at_idx;

-- +goose Down
CREATE INDEX tasks_team_id_created_at_idx ON tasks (team_id, created_at DESC, id DESC);
