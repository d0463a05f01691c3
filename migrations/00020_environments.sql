-- +goose Up
-- Environments (contract §3): what is deployed where. A deploy's target
-- (pipeline.TargetKey: the canonical JSON of the params that name where it
-- goes) is stored at submit; NULL for agents and pipelines without one.
ALTER TABLE tasks ADD COLUMN target_key text;
-- A re-run names the task it repeats (contract §3, rerun_of).
ALTER TABLE tasks ADD COLUMN rerun_of uuid REFERENCES tasks (id) ON DELETE SET NULL;
-- Deleting a task looks its re-runs up through this (few rows: re-runs only).
CREATE INDEX tasks_rerun_of_idx ON tasks (rerun_of) WHERE rerun_of IS NOT NULL;
-- What runs or waits for a target: unfinished tasks only, so the index
-- stays as small as the queue.
CREATE INDEX tasks_team_id_target_key_unfinished_idx ON tasks (team_id, pipeline, target_key)
    WHERE target_key IS NOT NULL AND state NOT IN ('completed', 'failed', 'cancelled');
-- A target's history: its completed deploys, newest first.
CREATE INDEX tasks_team_id_target_key_completed_idx ON tasks (team_id, pipeline, target_key, finished_at DESC, id DESC)
    WHERE target_key IS NOT NULL AND state = 'completed';

-- One row per team, pipeline and target that has had a deploy, kept by the
-- writes that submit and complete deploys (the triggers below), so listing
-- what is deployed where reads these few rows, never the task history.
-- current is the last completed deploy; previous the last completed one
-- before it whose params differ (what a rollback deploys again). No
-- foreign keys to tasks: readers join them and a missing task is null.
CREATE TABLE environments (
    team_id          uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    pipeline         text NOT NULL,
    target_key       text NOT NULL,
    current_task_id  uuid,
    previous_task_id uuid,
    PRIMARY KEY (team_id, pipeline, target_key)
);

-- A submitted deploy makes its target's row; an existing row is not
-- locked (ON CONFLICT DO NOTHING), so submissions never wait on each other.
-- +goose StatementBegin
CREATE FUNCTION tasks_environment_submitted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO environments (team_id, pipeline, target_key) VALUES (NEW.team_id, NEW.pipeline, NEW.target_key)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER tasks_environment_submitted AFTER INSERT ON tasks FOR EACH ROW
    WHEN (NEW.target_key IS NOT NULL)
    EXECUTE FUNCTION tasks_environment_submitted();

-- A completed deploy becomes its target's current one, in the transaction
-- that completes it (whichever write does). The current one moves to
-- previous only when their params differ: redeploying what runs keeps the
-- version to roll back to.
-- +goose StatementBegin
CREATE FUNCTION tasks_environment_completed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO environments AS e (team_id, pipeline, target_key, current_task_id)
    VALUES (NEW.team_id, NEW.pipeline, NEW.target_key, NEW.id)
    ON CONFLICT (team_id, pipeline, target_key) DO UPDATE SET
        previous_task_id = CASE
            WHEN e.current_task_id IS NULL OR e.current_task_id = NEW.id THEN e.previous_task_id
            WHEN (SELECT c.params FROM tasks c WHERE c.id = e.current_task_id) IS DISTINCT FROM NEW.params THEN e.current_task_id
            ELSE e.previous_task_id END,
        current_task_id = NEW.id;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER tasks_environment_completed AFTER UPDATE OF state ON tasks FOR EACH ROW
    WHEN (NEW.target_key IS NOT NULL AND NEW.state = 'completed' AND OLD.state <> 'completed')
    EXECUTE FUNCTION tasks_environment_completed();

-- +goose Down
DROP TRIGGER tasks_environment_completed ON tasks;
DROP FUNCTION tasks_environment_completed();
DROP TRIGGER tasks_environment_submitted ON tasks;
DROP FUNCTION tasks_environment_submitted();
DROP TABLE environments;
ALTER TABLE tasks DROP COLUMN rerun_of;
ALTER TABLE tasks DROP COLUMN target_key;
