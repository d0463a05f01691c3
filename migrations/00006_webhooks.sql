-- +goose Up
-- The outbox. task_events is the outbox itself (no second copy of an event is
-- written): each event row records the transaction that wrote it, and a
-- consumer keeps a cursor (txid, task_id, seq) into it. Transaction ids are
-- handed out in start order, not commit order, so a consumer only reads rows
-- of transactions older than every transaction still running (the snapshot's
-- xmin): no row can appear later behind its cursor, and nothing uncommitted
-- (nothing that did not happen) is ever read.
--
-- Added without a default first and given one after: no table rewrite and
-- no long lock on a big table. Events written before this migration keep a
-- NULL txid and are outside the outbox (they have happened already).
ALTER TABLE task_events ADD COLUMN txid xid8;
ALTER TABLE task_events ALTER COLUMN txid SET DEFAULT pg_current_xact_id();
CREATE INDEX task_events_txid_task_id_seq_idx ON task_events (txid, task_id, seq) WHERE txid IS NOT NULL;

CREATE TABLE outbox_cursors (
    name       text PRIMARY KEY,
    txid       xid8 NOT NULL,
    task_id    uuid NOT NULL,
    seq        integer NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
-- The webhook dispatcher's cursor starts before every stamped event, so no
-- event written after this migration is missed, however late the first
-- serve process starts (and whichever transaction, old or new, writes it).
INSERT INTO outbox_cursors (name, txid, task_id, seq)
VALUES ('webhooks', '0'::xid8, '00000000-0000-0000-0000-000000000000', 0);

-- Team subscriptions. secret is "whsec_" + base64 of the signing key; it is
-- shown once at creation and never returned again.
CREATE TABLE webhooks (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    url             text NOT NULL,
    events          text[] NOT NULL CHECK (cardinality(events) > 0),
    secret          text NOT NULL,
    created_by      uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    disabled_at     timestamptz,
    disabled_reason text
);
CREATE INDEX webhooks_team_id_created_at_idx ON webhooks (team_id, created_at DESC);

-- One row per message to one endpoint; id is the webhook-id header, the same
-- on every attempt. It is derived from (target, task, seq), so enqueueing the
-- same event twice (a dispatcher retrying a batch, two processes racing)
-- inserts nothing the second time. webhook_id is NULL for a task's own
-- webhook (tasks.webhook holds its url and secret). body is the exact bytes
-- that are signed and sent.
CREATE TABLE webhook_deliveries (
    id              text PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    webhook_id      uuid REFERENCES webhooks (id) ON DELETE CASCADE,
    task_id         uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    seq             integer NOT NULL,
    event_type      text NOT NULL,
    url             text NOT NULL,
    body            bytea NOT NULL,
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'succeeded', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    -- retries stop once now() passes window_start + the schedule's maximum
    -- age; a redelivery starts a new window.
    window_start    timestamptz NOT NULL DEFAULT now(),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    -- a claim pushes next_attempt_at past the send timeout and sets a new
    -- claim_token; only that claim may record the outcome.
    claim_token     uuid,
    last_attempt_at timestamptz,
    last_status     integer,
    last_error      text,
    delivered_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_webhook_id_created_at_idx ON webhook_deliveries (webhook_id, created_at DESC);
CREATE INDEX webhook_deliveries_task_id_idx ON webhook_deliveries (task_id);

-- +goose Down
DROP TABLE webhook_deliveries, webhooks, outbox_cursors;
DROP INDEX task_events_txid_task_id_seq_idx;
ALTER TABLE task_events DROP COLUMN txid;
