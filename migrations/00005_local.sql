-- +goose Up
-- The local provider's state: routes of flightdeck's own reverse proxy, the
-- demo-app instances behind them, a local CA with its certificates, and
-- health monitors with their alerts. It lives here (not in process memory)
-- so every serve process routes alike and a restarted one finds its
-- instances again.

-- local_effects records each local action that completed, by idempotency
-- key, in the same transaction as its effect: a re-run with the same key
-- (a retry or a resumed task) returns the recorded output instead of acting
-- twice.
CREATE TABLE local_effects (
    idempotency_key text PRIMARY KEY,
    action          text NOT NULL,
    output          jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE local_instances (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    host            text NOT NULL,
    version         text NOT NULL,
    pid             integer NOT NULL DEFAULT 0,
    port            integer NOT NULL DEFAULT 0,
    node            text NOT NULL,
    state           text NOT NULL CHECK (state IN ('starting', 'running', 'stopped', 'failed')),
    previous_id     uuid REFERENCES local_instances (id) ON DELETE SET NULL,
    -- The key of the instance_start that made it: a resumed start finds
    -- the row (and the process it may have left) instead of adding one.
    idempotency_key text NOT NULL UNIQUE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- Moved by every attempt and state change: recovery tells an abandoned
    -- start from one in progress by it.
    updated_at      timestamptz NOT NULL DEFAULT now(),
    stopped_at      timestamptz
);
CREATE INDEX local_instances_node_state_idx ON local_instances (node, state);
CREATE INDEX local_instances_host_idx ON local_instances (host);

-- A host (app.env, without .localhost) belongs to one team.
CREATE TABLE local_routes (
    host        text PRIMARY KEY CHECK (host ~ '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$'),
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    instance_id uuid REFERENCES local_instances (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX local_routes_team_id_idx ON local_routes (team_id);

-- The CA is a single row, made by whichever process needs it first.
CREATE TABLE local_ca (
    id         integer PRIMARY KEY CHECK (id = 1),
    cert_pem   text NOT NULL,
    key_pem    text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE local_certificates (
    serial          text PRIMARY KEY,
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    host            text NOT NULL,
    cert_pem        text NOT NULL,
    key_pem         text NOT NULL,
    not_after       timestamptz NOT NULL,
    revoked_at      timestamptz,
    idempotency_key text NOT NULL UNIQUE,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX local_certificates_host_idx ON local_certificates (host, created_at);
CREATE INDEX local_certificates_revoked_idx ON local_certificates (revoked_at) WHERE revoked_at IS NOT NULL;

CREATE TABLE local_monitors (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    host            text NOT NULL UNIQUE,
    interval_ms     integer NOT NULL CHECK (interval_ms > 0),
    next_check_at   timestamptz NOT NULL DEFAULT now(),
    last_checked_at timestamptz,
    healthy         boolean,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX local_monitors_next_check_at_idx ON local_monitors (next_check_at);

CREATE TABLE local_alerts (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    monitor_id  uuid REFERENCES local_monitors (id) ON DELETE SET NULL,
    host        text NOT NULL,
    state       text NOT NULL CHECK (state IN ('open', 'resolved')),
    message     text NOT NULL,
    opened_at   timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz
);
-- At most one open alert per monitor.
CREATE UNIQUE INDEX local_alerts_monitor_id_open_idx ON local_alerts (monitor_id) WHERE state = 'open';
CREATE INDEX local_alerts_team_id_state_idx ON local_alerts (team_id, state, opened_at);

-- +goose Down
DROP TABLE local_alerts, local_monitors, local_certificates, local_ca, local_routes, local_instances, local_effects;
