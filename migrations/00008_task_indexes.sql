-- +goose Up
-- The dashboard's history (throughput, durations, change-failure rate, time
-- to restore) reads finished tasks of a team within a recent window; this
-- index keeps those reads to the window instead of the team's whole history.
CREATE INDEX tasks_team_id_finished_at_idx ON tasks (team_id, finished_at)
    WHERE finished_at IS NOT NULL;
-- The task list filtered by state stays an index range scan at any depth
-- (a rare state such as needs_attention would otherwise walk the team's
-- whole history).
CREATE INDEX tasks_team_id_state_created_at_idx ON tasks (team_id, state, created_at DESC, id DESC);

-- +goose Down
DROP INDEX tasks_team_id_state_created_at_idx;
DROP INDEX tasks_team_id_finished_at_idx;
