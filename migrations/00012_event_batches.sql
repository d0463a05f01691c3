-- +goose Up
-- One row per write, not per event. A worker's write (a claim, a step, a
-- finish) appends several events at once; stored one row each, they were
-- most of the queue's database work: a heap tuple, a primary key entry, an
-- outbox entry and a foreign key check per event. Now each write's events
-- are one row holding them as a JSON array, seqs first_seq … last_seq, so
-- the outbox indexes writes instead of events. Readers see the same events:
-- the store decodes the arrays, and the view task_events below keeps the
-- old one-row-per-event shape for SQL by hand.
CREATE TABLE task_event_batches (
    task_id    uuid NOT NULL,
    first_seq  integer NOT NULL,
    last_seq   integer NOT NULL,
    -- the writing transaction: the outbox's order (see 00006_webhooks.sql)
    txid       xid8 NOT NULL DEFAULT pg_current_xact_id(),
    created_at timestamptz NOT NULL DEFAULT now(),
    -- [{"type","status","step","total_step","step_name","tool","message","data"}, …];
    -- zero values are left out. json, not jsonb: stored as written, so a
    -- write costs PostgreSQL a syntax check instead of a conversion, and
    -- readers decode the whole array anyway.
    events     json NOT NULL,
    -- (task_id, last_seq): "events after seq N" is a range scan
    PRIMARY KEY (task_id, last_seq),
    CHECK (first_seq BETWEEN 1 AND last_seq)
);
CREATE INDEX task_event_batches_txid_idx ON task_event_batches (txid, task_id, last_seq);

-- Events written before the outbox existed have no txid; 0 keeps them
-- behind every consumer's cursor, as NULL kept them out of the index.
INSERT INTO task_event_batches (task_id, first_seq, last_seq, txid, created_at, events)
SELECT task_id, seq, seq, COALESCE(txid, '0'::xid8), created_at,
    jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
        'type', type, 'status', status, 'step', NULLIF(step, 0), 'total_step', NULLIF(total_step, 0),
        'step_name', NULLIF(step_name, ''), 'tool', NULLIF(tool, ''), 'message', NULLIF(message, '')))
        || CASE WHEN data = '{}' THEN '{}' ELSE jsonb_build_object('data', data) END)::json
FROM task_events;

DROP TABLE task_events;

CREATE VIEW task_events AS
SELECT b.task_id, b.first_seq + x.ord::integer - 1 AS seq,
    x.e->>'type' AS type, x.e->>'status' AS status,
    COALESCE((x.e->>'step')::integer, 0) AS step, COALESCE((x.e->>'total_step')::integer, 0) AS total_step,
    COALESCE(x.e->>'step_name', '') AS step_name, COALESCE(x.e->>'tool', '') AS tool,
    COALESCE(x.e->>'message', '') AS message, COALESCE((x.e->'data')::jsonb, '{}') AS data,
    b.created_at, b.txid
FROM task_event_batches b CROSS JOIN LATERAL json_array_elements(b.events) WITH ORDINALITY AS x(e, ord);

-- No foreign keys from the queue's two busiest child tables to tasks: each
-- checked row cost a lookup and a row lock on its task (about a tenth of
-- the database's work under load), and every writer of these rows already
-- holds its task's row (it updated it in the same statement). Deleting a
-- task (with its team) still deletes them, here.
ALTER TABLE task_steps DROP CONSTRAINT task_steps_task_id_fkey;

-- +goose StatementBegin
CREATE FUNCTION tasks_delete_children() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM task_event_batches WHERE task_id IN (SELECT id FROM deleted);
    DELETE FROM task_steps WHERE task_id IN (SELECT id FROM deleted);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER tasks_delete_children AFTER DELETE ON tasks
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION tasks_delete_children();

-- +goose Down
DROP TRIGGER tasks_delete_children ON tasks;
DROP FUNCTION tasks_delete_children();
ALTER TABLE task_steps ADD FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE CASCADE;
CREATE TABLE task_events_rows AS SELECT * FROM task_events;
DROP VIEW task_events;
DROP TABLE task_event_batches;
ALTER TABLE task_events_rows RENAME TO task_events;
ALTER TABLE task_events ALTER COLUMN txid SET DEFAULT pg_current_xact_id();
ALTER TABLE task_events ALTER COLUMN created_at SET DEFAULT now();
ALTER TABLE task_events ALTER COLUMN data SET DEFAULT '{}',
    ALTER COLUMN step SET DEFAULT 0, ALTER COLUMN total_step SET DEFAULT 0,
    ALTER COLUMN step_name SET DEFAULT '', ALTER COLUMN tool SET DEFAULT '', ALTER COLUMN message SET DEFAULT '',
    ALTER COLUMN type SET NOT NULL, ALTER COLUMN status SET NOT NULL, ALTER COLUMN created_at SET NOT NULL;
ALTER TABLE task_events ADD PRIMARY KEY (task_id, seq);
ALTER TABLE task_events ADD FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE CASCADE;
CREATE INDEX task_events_txid_task_id_seq_idx ON task_events (txid, task_id, seq) WHERE txid IS NOT NULL;
