-- +goose Up
-- A submit lists its deploy's target itself (store.TaskInsert) and a task
-- cancelled at once is rolled up by its insert's transaction, in Go
-- (store.taskEnded), like every task that ends: the insert triggers go,
-- and with them the SQL copies of the rollup rules (store/task_ended.go
-- holds the rules now).
DROP TRIGGER tasks_rollup_insert ON tasks;
DROP FUNCTION tasks_rollup_insert();
DROP TRIGGER tasks_environment_submitted ON tasks;
DROP FUNCTION tasks_environment_submitted();
DROP FUNCTION flightdeck_rollup_add(task_ended[]);
DROP TYPE task_ended;
DROP FUNCTION flightdeck_deploy_target(text, text, jsonb, text);
DROP FUNCTION flightdeck_ms_bucket(bigint);

-- +goose Down
CREATE FUNCTION flightdeck_ms_bucket(ms bigint) RETURNS smallint LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN ms <= 1 THEN 0 ELSE least(99, ceil(4 * ln(ms::float8) / ln(2)))::smallint END;

CREATE FUNCTION flightdeck_deploy_target(pipeline text, target_key text, params jsonb, concurrency_key text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN pipeline || ' ' || coalesce(target_key, concurrency_key, (params - 'version')::text);

CREATE TYPE task_ended AS (team_id uuid, kind text, pipeline text, state text, created_at timestamptz,
    started_at timestamptz, finished_at timestamptz, waited_ms bigint, target text);

-- +goose StatementBegin
CREATE FUNCTION flightdeck_rollup_add(ended task_ended[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    -- this session's rows: writers on other connections never wait on them
    my_shard smallint := pg_backend_pid() % 8;
BEGIN
    INSERT INTO task_rollups AS r (team_id, day, pipeline, outcome, bucket, shard, tasks, ms, waited_ms, created_min)
    SELECT team_id, (finished_at AT TIME ZONE 'UTC')::date, CASE WHEN kind = 'agent' THEN '' ELSE pipeline END, state,
           flightdeck_ms_bucket(ms), my_shard, count(*), sum(ms), sum(waited_ms), min(created_at)
    FROM (SELECT e.*, CASE WHEN started_at IS NULL THEN 0
                      ELSE greatest(0, (extract(epoch FROM finished_at - started_at) * 1000)::bigint - waited_ms) END AS ms
          FROM unnest(ended) e) e
    GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (team_id, day, pipeline, outcome, bucket, shard) DO UPDATE
        SET tasks = r.tasks + excluded.tasks, ms = r.ms + excluded.ms, waited_ms = r.waited_ms + excluded.waited_ms,
            created_min = least(r.created_min, excluded.created_min);

    INSERT INTO task_minutes AS m (team_id, minute, outcome, shard, tasks)
    SELECT team_id, date_trunc('minute', finished_at), state, my_shard, count(*) FROM unnest(ended)
    WHERE finished_at >= now() - interval '1 day'
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (team_id, minute, outcome, shard) DO UPDATE SET tasks = m.tasks + excluded.tasks;

    IF NOT EXISTS (SELECT 1 FROM unnest(ended) e WHERE e.kind = 'deploy' AND (e.state = 'failed' OR e.state = 'completed'
                   AND EXISTS (SELECT 1 FROM deploy_failures f WHERE f.team_id = e.team_id AND f.target = e.target))) THEN
        RETURN;
    END IF;
    WITH d AS (
        -- run: how many successes of the target came before this deploy
        SELECT team_id, target, pipeline, state, created_at, finished_at,
               count(*) FILTER (WHERE state = 'completed') OVER (PARTITION BY team_id, target ORDER BY finished_at
                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - (state = 'completed')::int AS run
        FROM unnest(ended) WHERE kind = 'deploy' AND state IN ('completed', 'failed')
    ), runs AS (
        SELECT d.team_id, d.target, d.run, min(d.pipeline) AS pipeline,
               min(d.finished_at) FILTER (WHERE d.state = 'completed') AS restored_at,
               min(d.created_at) FILTER (WHERE d.state = 'completed') AS created_min,
               CASE WHEN d.run = 0 THEN coalesce(min(f.since), min(d.finished_at) FILTER (WHERE d.state = 'failed'))
                    ELSE min(d.finished_at) FILTER (WHERE d.state = 'failed') END AS since
        FROM d LEFT JOIN deploy_failures f ON d.run = 0 AND f.team_id = d.team_id AND f.target = d.target
        GROUP BY d.team_id, d.target, d.run
    ), restored AS (
        INSERT INTO task_rollups AS r (team_id, day, pipeline, outcome, bucket, shard, tasks, ms, waited_ms, created_min)
        SELECT team_id, day, pipeline, 'restored', flightdeck_ms_bucket(ms), my_shard, count(*), sum(ms), 0, min(created_min)
        FROM (SELECT team_id, (restored_at AT TIME ZONE 'UTC')::date AS day, pipeline, created_min,
                     (extract(epoch FROM restored_at - since) * 1000)::bigint AS ms
              FROM runs WHERE restored_at IS NOT NULL AND since IS NOT NULL) x
        GROUP BY 1, 2, 3, 5 ORDER BY 1, 2, 3, 5
        ON CONFLICT (team_id, day, pipeline, outcome, bucket, shard) DO UPDATE
            SET tasks = r.tasks + excluded.tasks, ms = r.ms + excluded.ms, created_min = least(r.created_min, excluded.created_min)
    ), last AS (
        -- where each target stands: failing unless its last deploy succeeded
        SELECT DISTINCT ON (team_id, target) team_id, target, since, restored_at FROM runs
        ORDER BY team_id, target, run DESC
    ), failing AS (
        INSERT INTO deploy_failures AS f (team_id, target, since)
        SELECT team_id, target, since FROM last WHERE restored_at IS NULL ORDER BY 1, 2
        ON CONFLICT (team_id, target) DO UPDATE SET since = excluded.since
    )
    DELETE FROM deploy_failures f USING last
    WHERE last.restored_at IS NOT NULL AND f.team_id = last.team_id AND f.target = last.target;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION tasks_rollup_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM flightdeck_rollup_add(array_agg(ROW(n.team_id, n.kind, n.pipeline, n.state, n.created_at, n.started_at,
            coalesce(n.finished_at, now()), n.waited_ms, flightdeck_deploy_target(n.pipeline, n.target_key, n.params, n.concurrency_key))::task_ended))
    FROM new_rows n WHERE n.state IN ('completed', 'failed', 'cancelled')
    HAVING count(*) > 0;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER tasks_rollup_insert AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION tasks_rollup_insert();

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
