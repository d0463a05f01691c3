-- +goose Up
-- Event batches are stored as text in a positional form. A noop task's
-- batches were about 870 bytes, most of them the keys repeated in every
-- event, and PostgreSQL parsed each json value as it stored it (json_lex
-- was 2.4% of all CPU in a burn-down). Now each event is an array
--
--   [type, status, message, data, step, total_step, step_name, tool]
--
-- with the trailing ones left out when they are zero ({} for data); the
-- store writes and reads this form (store/event_batch.go), and the view
-- task_events keeps reading it by hand as before. Text is not checked on
-- the way in: every writer is the store's encoder or the SQL beside it.
DROP VIEW task_events;

-- +goose StatementBegin
CREATE FUNCTION flightdeck_events_positional(events json) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT json_agg(json_build_array(e->>'type', e->>'status', COALESCE(e->>'message', ''), COALESCE(e->'data', '{}'::json),
        COALESCE((e->>'step')::integer, 0), COALESCE((e->>'total_step')::integer, 0),
        COALESCE(e->>'step_name', ''), COALESCE(e->>'tool', '')) ORDER BY ord)::text
    FROM json_array_elements(events) WITH ORDINALITY AS x(e, ord)
$$;
-- +goose StatementEnd
ALTER TABLE task_event_batches ALTER COLUMN events TYPE text USING flightdeck_events_positional(events);
DROP FUNCTION flightdeck_events_positional(json);

CREATE VIEW task_events AS
SELECT b.task_id, b.first_seq + x.ord::integer - 1 AS seq,
    x.e->>0 AS type, x.e->>1 AS status,
    COALESCE((x.e->>4)::integer, 0) AS step, COALESCE((x.e->>5)::integer, 0) AS total_step,
    COALESCE(x.e->>6, '') AS step_name, COALESCE(x.e->>7, '') AS tool,
    COALESCE(x.e->>2, '') AS message, COALESCE((x.e->3)::jsonb, '{}') AS data,
    b.created_at, b.txid
FROM task_event_batches b CROSS JOIN LATERAL json_array_elements(b.events::json) WITH ORDINALITY AS x(e, ord);

-- +goose Down
DROP VIEW task_events;

-- +goose StatementBegin
CREATE FUNCTION flightdeck_events_keyed(events text) RETURNS json LANGUAGE sql IMMUTABLE AS $$
    SELECT json_agg(jsonb_strip_nulls(jsonb_build_object('type', e->>0, 'status', e->>1, 'message', NULLIF(e->>2, ''),
            'step', NULLIF((e->>4)::integer, 0), 'total_step', NULLIF((e->>5)::integer, 0),
            'step_name', NULLIF(e->>6, ''), 'tool', NULLIF(e->>7, '')))
        || CASE WHEN COALESCE((e->3)::jsonb, '{}') = '{}' THEN '{}' ELSE jsonb_build_object('data', e->3) END ORDER BY ord)
    FROM json_array_elements(events::json) WITH ORDINALITY AS x(e, ord)
$$;
-- +goose StatementEnd
ALTER TABLE task_event_batches ALTER COLUMN events TYPE json USING flightdeck_events_keyed(events);
DROP FUNCTION flightdeck_events_keyed(text);

CREATE VIEW task_events AS
SELECT b.task_id, b.first_seq + x.ord::integer - 1 AS seq,
    x.e->>'type' AS type, x.e->>'status' AS status,
    COALESCE((x.e->>'step')::integer, 0) AS step, COALESCE((x.e->>'total_step')::integer, 0) AS total_step,
    COALESCE(x.e->>'step_name', '') AS step_name, COALESCE(x.e->>'tool', '') AS tool,
    COALESCE(x.e->>'message', '') AS message, COALESCE((x.e->'data')::jsonb, '{}') AS data,
    b.created_at, b.txid
FROM task_event_batches b CROSS JOIN LATERAL json_array_elements(b.events) WITH ORDINALITY AS x(e, ord);
