-- +goose Up
-- Event batches hold the contract's event JSON, keyed, as jsonb: each event
-- an object {"type","status","message","data","step","total_step",
-- "step_name","tool"} with zero values left out (task_id, seq and time come
-- from the row). The positional text form of 00015 saved bytes but needed a
-- matching encoder and decoder in Go, in SQL fragments and in this view;
-- keyed objects read the same everywhere. Rows already written keyed (the
-- deadline sweep wrote them so) are kept as they are.
DROP VIEW task_events;

-- +goose StatementBegin
CREATE FUNCTION flightdeck_events_keyed(events text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT COALESCE(jsonb_agg(CASE WHEN jsonb_typeof(e) = 'object' THEN e ELSE
        jsonb_strip_nulls(jsonb_build_object('type', e->>0, 'status', e->>1, 'message', NULLIF(e->>2, ''),
            'step', NULLIF((e->>4)::integer, 0), 'total_step', NULLIF((e->>5)::integer, 0),
            'step_name', NULLIF(e->>6, ''), 'tool', NULLIF(e->>7, '')))
        || CASE WHEN COALESCE(e->3, '{}') IN ('{}', 'null') THEN '{}' ELSE jsonb_build_object('data', e->3) END
        END ORDER BY ord), '[]')
    FROM jsonb_array_elements(events::jsonb) WITH ORDINALITY AS x(e, ord)
$$;
-- +goose StatementEnd
ALTER TABLE task_event_batches ALTER COLUMN events TYPE jsonb USING flightdeck_events_keyed(events);
DROP FUNCTION flightdeck_events_keyed(text);

CREATE VIEW task_events AS
SELECT b.task_id, b.first_seq + x.ord::integer - 1 AS seq,
    x.e->>'type' AS type, x.e->>'status' AS status,
    COALESCE((x.e->>'step')::integer, 0) AS step, COALESCE((x.e->>'total_step')::integer, 0) AS total_step,
    COALESCE(x.e->>'step_name', '') AS step_name, COALESCE(x.e->>'tool', '') AS tool,
    COALESCE(x.e->>'message', '') AS message, COALESCE(x.e->'data', '{}') AS data,
    b.created_at, b.txid
FROM task_event_batches b CROSS JOIN LATERAL jsonb_array_elements(b.events) WITH ORDINALITY AS x(e, ord);

-- +goose Down
DROP VIEW task_events;

-- +goose StatementBegin
CREATE FUNCTION flightdeck_events_positional(events jsonb) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT json_agg(json_build_array(e->>'type', e->>'status', COALESCE(e->>'message', ''), COALESCE(e->'data', '{}'::jsonb),
        COALESCE((e->>'step')::integer, 0), COALESCE((e->>'total_step')::integer, 0),
        COALESCE(e->>'step_name', ''), COALESCE(e->>'tool', '')) ORDER BY ord)::text
    FROM jsonb_array_elements(events) WITH ORDINALITY AS x(e, ord)
$$;
-- +goose StatementEnd
ALTER TABLE task_event_batches ALTER COLUMN events TYPE text USING flightdeck_events_positional(events);
DROP FUNCTION flightdeck_events_positional(jsonb);

CREATE VIEW task_events AS
SELECT b.task_id, b.first_seq + x.ord::integer - 1 AS seq,
    x.e->>0 AS type, x.e->>1 AS status,
    COALESCE((x.e->>4)::integer, 0) AS step, COALESCE((x.e->>5)::integer, 0) AS total_step,
    COALESCE(x.e->>6, '') AS step_name, COALESCE(x.e->>7, '') AS tool,
    COALESCE(x.e->>2, '') AS message, COALESCE((x.e->3)::jsonb, '{}') AS data,
    b.created_at, b.txid
FROM task_event_batches b CROSS JOIN LATERAL json_array_elements(b.events::json) WITH ORDINALITY AS x(e, ord);
