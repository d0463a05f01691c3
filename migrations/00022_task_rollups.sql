-- +goose Up
-- Dashboard figures that stay cheap however long the history grows: the
-- writes that end tasks keep per-day aggregates (task_rollups), so the
-- dashboard reads hundreds of rows, never the finished tasks themselves.

-- Time spent waiting for a person (awaiting_approval, awaiting_input) is not
-- run time. waiting_since is set when a task starts to wait; waited_ms adds
-- up the waits when it stops. Kept by a trigger on the state transitions
-- into and out of waiting only, so every other write pays nothing.
ALTER TABLE tasks ADD COLUMN waiting_since timestamptz, ADD COLUMN waited_ms bigint NOT NULL DEFAULT 0;

-- +goose StatementBegin
CREATE FUNCTION tasks_track_waiting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IN ('awaiting_approval', 'awaiting_input') THEN
        NEW.waiting_since := now();
    ELSE
        -- a task that began waiting before this migration has no start: 0
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

-- Finished tasks per team, UTC day, pipeline ('' for agent tasks), outcome
-- and run-time bucket: how many, their summed run time (finished minus
-- started minus waited) and waiting time. Outcome 'restored' counts deploy
-- targets brought back by a completed deploy after failing; its ms is the
-- time to restore (from the first failure of the run to that deploy).
-- Buckets are quarter powers of two of milliseconds (store.BucketUpper), so
-- percentiles are read to within 19%.
CREATE TABLE task_rollups (
    team_id   uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    day       date NOT NULL,
    pipeline  text NOT NULL,
    outcome   text NOT NULL CHECK (outcome IN ('completed', 'failed', 'cancelled', 'restored')),
    bucket    smallint NOT NULL,
    tasks     integer NOT NULL,
    ms        bigint NOT NULL,
    waited_ms bigint NOT NULL,
    -- the earliest creation among them: tasks that ended on a day were all
    -- created since the least of its rows' (the task list's finished_after
    -- filter starts its scan there)
    created_min timestamptz NOT NULL,
    PRIMARY KEY (team_id, day, pipeline, outcome, bucket)
);

-- Tasks that ended per team, minute and outcome, for the dashboard's last
-- hour; rows older than a day are pruned (store.TaskMinutePrune).
CREATE TABLE task_minutes (
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    minute  timestamptz NOT NULL,
    outcome text NOT NULL CHECK (outcome IN ('completed', 'failed', 'cancelled')),
    tasks   integer NOT NULL,
    PRIMARY KEY (team_id, minute, outcome)
);

-- Deploy targets whose last deploy failed, and since when (the first
-- failure after their last success): what time to restore is measured from.
CREATE TABLE deploy_failures (
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    target  text NOT NULL,
    since   timestamptz NOT NULL,
    PRIMARY KEY (team_id, target)
);

CREATE FUNCTION flightdeck_ms_bucket(ms bigint) RETURNS smallint LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN ms <= 1 THEN 0 ELSE least(99, ceil(4 * ln(ms::float8) / ln(2)))::smallint END;

-- A deploy's target for time to restore: the pipeline and its target key
-- (pipeline.TargetKey, stored at submit since 00020); for deploys made
-- before, their concurrency key, else their params but the version.
CREATE FUNCTION flightdeck_deploy_target(pipeline text, target_key text, params jsonb, concurrency_key text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN pipeline || ' ' || coalesce(target_key, concurrency_key, (params - 'version')::text);

-- What the rollup needs of an ended task.
CREATE TYPE task_ended AS (team_id uuid, kind text, pipeline text, state text, created_at timestamptz,
    started_at timestamptz, finished_at timestamptz, waited_ms bigint, target text);

-- flightdeck_rollup_add adds ended tasks to task_rollups and moves
-- deploy_failures on. A target's deploys are taken in finish order: each
-- success after failures is a restore, from the first failure of the run
-- (carried over from deploy_failures for the first run). Rows are upserted
-- in key order, so concurrent writers lock them in one order. PL/pgSQL,
-- so a session plans each statement once, not at every call; the restore
-- statement runs only when a deploy failed or a failing target succeeded.
-- +goose StatementBegin
CREATE FUNCTION flightdeck_rollup_add(ended task_ended[]) RETURNS void LANGUAGE plpgsql AS $$
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

-- The writes that end tasks, whichever they are (a worker's outcome, a
-- cancel, a resolve, the rescuer, a submission cancelled at once), feed the
-- rollup once per statement: the tasks it ended, aggregated. Statements
-- that end none (claims, progress, heartbeats) stop at the first check.
-- +goose StatementBegin
CREATE FUNCTION tasks_rollup_update() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER tasks_rollup_update AFTER UPDATE ON tasks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION tasks_rollup_update();

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

-- Backfill: the tasks that ended before this migration, a day at a time in
-- finish order (their waiting time is unknown: 0).
-- +goose StatementBegin
DO $$
DECLARE
    d date;
BEGIN
    FOR d IN SELECT DISTINCT (finished_at AT TIME ZONE 'UTC')::date FROM tasks
             WHERE state IN ('completed', 'failed', 'cancelled') AND finished_at IS NOT NULL ORDER BY 1 LOOP
        PERFORM flightdeck_rollup_add(array_agg(ROW(t.team_id, t.kind, t.pipeline, t.state, t.created_at, t.started_at, t.finished_at,
                t.waited_ms, flightdeck_deploy_target(t.pipeline, t.target_key, t.params, t.concurrency_key))::task_ended))
        FROM tasks t
        WHERE t.state IN ('completed', 'failed', 'cancelled') AND t.finished_at IS NOT NULL
          AND (t.finished_at AT TIME ZONE 'UTC')::date = d;
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER tasks_rollup_insert ON tasks;
DROP TRIGGER tasks_rollup_update ON tasks;
DROP FUNCTION tasks_rollup_insert();
DROP FUNCTION tasks_rollup_update();
DROP FUNCTION flightdeck_rollup_add(task_ended[]);
DROP TYPE task_ended;
DROP FUNCTION flightdeck_deploy_target(text, text, jsonb, text);
DROP FUNCTION flightdeck_ms_bucket(bigint);
DROP TABLE deploy_failures;
DROP TABLE task_minutes;
DROP TABLE task_rollups;
DROP TRIGGER tasks_track_waiting ON tasks;
DROP FUNCTION tasks_track_waiting();
ALTER TABLE tasks DROP COLUMN waited_ms, DROP COLUMN waiting_since;
