-- +goose Up
-- The writes that end tasks keep the dashboard's rollups, the environments'
-- current and previous deploy and the time tasks wait for people in Go
-- (store.taskApply and store.taskEnded, in the same transaction), so the
-- triggers that did it on every UPDATE of tasks go, with their functions.
DROP TRIGGER tasks_rollup_update ON tasks;
DROP FUNCTION tasks_rollup_update();
DROP TRIGGER tasks_environment_completed ON tasks;
DROP FUNCTION tasks_environment_completed();
DROP TRIGGER tasks_track_waiting ON tasks;
DROP FUNCTION tasks_track_waiting();

-- +goose Down
-- +goose StatementBegin
CREATE FUNCTION tasks_track_waiting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IN ('awaiting_approval', 'awaiting_input') THEN
        NEW.waiting_since := now();
    ELSE
        NEW.waited_ms := NEW.waited_ms
            + coalesce(greatest(0, (extract(epoch FROM now() - OLD.waiting_since) * 1000)::bigint), 0);
        NEW.waiting_since := NULL;
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd
CREATE TRIGGER tasks_track_waiting BEFORE UPDATE OF state ON tasks FOR EACH ROW
    WHEN ((OLD.state IN ('awaiting_approval', 'awaiting_input')) IS DISTINCT FROM (NEW.state IN ('awaiting_approval', 'awaiting_input')))
    EXECUTE FUNCTION tasks_track_waiting();
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
-- +goose StatementBegin
CREATE FUNCTION tasks_rollup_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows WHERE state IN ('completed', 'failed', 'cancelled')) THEN
        RETURN NULL;
    END IF;
    PERFORM flightdeck_rollup_add(array_agg(ROW(n.team_id, n.kind, n.pipeline, n.state, n.created_at, n.started_at,
            coalesce(n.finished_at, now()), n.waited_ms, flightdeck_deploy_target(n.pipeline, n.target_key, n.params, n.concurrency_key))::task_ended))
    FROM new_rows n
    WHERE n.state IN ('completed', 'failed', 'cancelled')
        AND n.id NOT IN (SELECT o.id FROM old_rows o WHERE o.state IN ('completed', 'failed', 'cancelled'))
    HAVING count(*) > 0;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER tasks_rollup_update AFTER UPDATE ON tasks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION tasks_rollup_update();
