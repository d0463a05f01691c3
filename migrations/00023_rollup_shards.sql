-- +goose Up
-- Rollup rows per writer: every statement that ends tasks upserts the few
-- rows of its team, day, pipeline and outcome, so two workers' batched
-- writes (each a transaction) waited on each other's commit there and ran
-- one after the other. A row now also has a shard, the session's backend
-- pid modulo 8: concurrent writers upsert different rows (but when two
-- pids share a residue), and readers already sum rows.
ALTER TABLE task_rollups ADD COLUMN shard smallint NOT NULL DEFAULT 0;
ALTER TABLE task_rollups DROP CONSTRAINT task_rollups_pkey,
    ADD PRIMARY KEY (team_id, day, pipeline, outcome, bucket, shard);
ALTER TABLE task_minutes ADD COLUMN shard smallint NOT NULL DEFAULT 0;
ALTER TABLE task_minutes DROP CONSTRAINT task_minutes_pkey,
    ADD PRIMARY KEY (team_id, minute, outcome, shard);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION flightdeck_rollup_add(ended task_ended[]) RETURNS void LANGUAGE plpgsql AS $$
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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION flightdeck_rollup_add(ended task_ended[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_rollups AS r (team_id, day, pipeline, outcome, bucket, tasks, ms, waited_ms, created_min)
    SELECT team_id, (finished_at AT TIME ZONE 'UTC')::date, CASE WHEN kind = 'agent' THEN '' ELSE pipeline END, state,
           flightdeck_ms_bucket(ms), count(*), sum(ms), sum(waited_ms), min(created_at)
    FROM (SELECT e.*, CASE WHEN started_at IS NULL THEN 0
                      ELSE greatest(0, (extract(epoch FROM finished_at - started_at) * 1000)::bigint - waited_ms) END AS ms
          FROM unnest(ended) e) e
    GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (team_id, day, pipeline, outcome, bucket) DO UPDATE
        SET tasks = r.tasks + excluded.tasks, ms = r.ms + excluded.ms, waited_ms = r.waited_ms + excluded.waited_ms,
            created_min = least(r.created_min, excluded.created_min);

    INSERT INTO task_minutes AS m (team_id, minute, outcome, tasks)
    SELECT team_id, date_trunc('minute', finished_at), state, count(*) FROM unnest(ended)
    WHERE finished_at >= now() - interval '1 day'
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (team_id, minute, outcome) DO UPDATE SET tasks = m.tasks + excluded.tasks;

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
        INSERT INTO task_rollups AS r (team_id, day, pipeline, outcome, bucket, tasks, ms, waited_ms, created_min)
        SELECT team_id, day, pipeline, 'restored', flightdeck_ms_bucket(ms), count(*), sum(ms), 0, min(created_min)
        FROM (SELECT team_id, (restored_at AT TIME ZONE 'UTC')::date AS day, pipeline, created_min,
                     (extract(epoch FROM restored_at - since) * 1000)::bigint AS ms
              FROM runs WHERE restored_at IS NOT NULL AND since IS NOT NULL) x
        GROUP BY 1, 2, 3, 5 ORDER BY 1, 2, 3, 5
        ON CONFLICT (team_id, day, pipeline, outcome, bucket) DO UPDATE
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
CREATE TEMP TABLE r AS SELECT team_id, day, pipeline, outcome, bucket, sum(tasks)::int AS tasks, sum(ms)::bigint AS ms,
    sum(waited_ms)::bigint AS waited_ms, min(created_min) AS created_min FROM task_rollups GROUP BY 1, 2, 3, 4, 5;
TRUNCATE task_rollups;
ALTER TABLE task_rollups DROP COLUMN shard, ADD PRIMARY KEY (team_id, day, pipeline, outcome, bucket);
INSERT INTO task_rollups SELECT * FROM r;
CREATE TEMP TABLE m AS SELECT team_id, minute, outcome, sum(tasks)::int AS tasks FROM task_minutes GROUP BY 1, 2, 3;
TRUNCATE task_minutes;
ALTER TABLE task_minutes DROP COLUMN shard, ADD PRIMARY KEY (team_id, minute, outcome);
INSERT INTO task_minutes SELECT * FROM m;
