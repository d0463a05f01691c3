-- +goose Up
-- The dashboard's history (throughput, durations, change-failure rate, time
-- to restore) reads finished tasks of a team within a recent window; this
-- index keeps those reads to the window instead of the team's whole history.
CREATE INDEX tasks_team_id_finished_at_idx ON tasks (team_id, finished_at)
    WHERE finished_at IS NOT NULL;

-- +goose Down
DROP INDEX tasks_team_id_finished_at_idx;
