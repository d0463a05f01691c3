-- +goose Up
-- The rollup trigger found the tasks a statement ended by joining its new
-- rows to its old ones. PL/pgSQL plans that join once per session, with the
-- transition tables' sizes at its first call; planned for a row or two (a
-- claim's), it ran as a nested loop over both tables from then on:
-- quadratic in the batch, 8 ms of a 96-task write. NOT IN over the old rows
-- that had already ended is a hashed subplan whatever the sizes, so the
-- check is linear (and the hash is empty when no task had ended before).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION tasks_rollup_update() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION tasks_rollup_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows WHERE state IN ('completed', 'failed', 'cancelled')) THEN
        RETURN NULL;
    END IF;
    PERFORM flightdeck_rollup_add(array_agg(ROW(n.team_id, n.kind, n.pipeline, n.state, n.created_at, n.started_at,
            coalesce(n.finished_at, now()), n.waited_ms, flightdeck_deploy_target(n.pipeline, n.target_key, n.params, n.concurrency_key))::task_ended))
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE n.state IN ('completed', 'failed', 'cancelled') AND o.state NOT IN ('completed', 'failed', 'cancelled')
    HAVING count(*) > 0;
    RETURN NULL;
END $$;
-- +goose StatementEnd
