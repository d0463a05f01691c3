-- +goose Up
-- Tasks: the queue. priority is a small int (hotfix=1 … low=4) so the claim's
-- ORDER BY priority, created_at, id walks tasks_claim_idx in order. A task is
-- claimable when nobody holds it and it is pending, or compensating after a
-- cancel while it held no worker (awaiting approval, re-queued).
CREATE TABLE tasks (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    team_id             uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    kind                text NOT NULL CHECK (kind IN ('deploy', 'agent')),
    pipeline            text NOT NULL DEFAULT '',
    params              jsonb NOT NULL DEFAULT '{}',
    prompt              text NOT NULL DEFAULT '',
    priority            smallint NOT NULL DEFAULT 3 CHECK (priority BETWEEN 1 AND 4),
    state               text NOT NULL DEFAULT 'pending' CHECK (state IN (
                            'pending', 'scheduled', 'running', 'awaiting_approval', 'awaiting_input',
                            'compensating', 'needs_attention', 'completed', 'failed', 'cancelled')),
    idempotency_key     text,
    request_hash        bytea,
    attempt             integer NOT NULL DEFAULT 0,
    max_attempts        integer NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 100),
    run_after           timestamptz,
    deadline_at         timestamptz,
    lease_owner         text,
    lease_token         uuid,
    lease_expires_at    timestamptz,
    cancel_requested_at timestamptz,
    created_by          uuid NOT NULL REFERENCES users (id),
    created_at          timestamptz NOT NULL DEFAULT now(),
    started_at          timestamptz,
    finished_at         timestamptz,
    error               text,
    result              jsonb,
    webhook             jsonb,
    -- progress: steps completed of the total (agent: iterations of the budget)
    progress_step       integer NOT NULL DEFAULT 0,
    progress_total      integer NOT NULL DEFAULT 0,
    -- last_seq hands out the per-task event seq; it is bumped in the same
    -- transaction as the event insert, so seqs are gap-free and ordered.
    last_seq            integer NOT NULL DEFAULT 0
-- Room on each page lets the frequent updates that touch no indexed column
-- (last_seq, progress) be HOT updates: no new index entries.
) WITH (fillfactor = 70);
CREATE INDEX tasks_claim_idx ON tasks (priority, created_at, id)
    WHERE lease_owner IS NULL AND state IN ('pending', 'compensating');
CREATE INDEX tasks_team_id_created_at_idx ON tasks (team_id, created_at DESC, id DESC);
CREATE INDEX tasks_team_id_pending_idx ON tasks (team_id) WHERE state = 'pending';
-- Dashboards count unfinished tasks by state without touching finished ones.
CREATE INDEX tasks_team_id_active_idx ON tasks (team_id, state, priority, created_at)
    WHERE state NOT IN ('completed', 'failed', 'cancelled');
CREATE INDEX tasks_lease_expires_at_idx ON tasks (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
CREATE INDEX tasks_run_after_idx ON tasks (run_after) WHERE state = 'scheduled';
CREATE INDEX tasks_deadline_at_idx ON tasks (deadline_at) WHERE state = 'pending' AND deadline_at IS NOT NULL;
CREATE INDEX tasks_idempotency_created_at_idx ON tasks (created_at) WHERE idempotency_key IS NOT NULL;
CREATE UNIQUE INDEX tasks_team_id_idempotency_key_idx ON tasks (team_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- The event log and outbox of every task: (task_id, seq) with seq 1, 2, 3 …
CREATE TABLE task_events (
    task_id    uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    seq        integer NOT NULL,
    type       text NOT NULL,
    status     text NOT NULL,
    step       integer NOT NULL DEFAULT 0,
    total_step integer NOT NULL DEFAULT 0,
    step_name  text NOT NULL DEFAULT '',
    tool       text NOT NULL DEFAULT '',
    message    text NOT NULL DEFAULT '',
    data       jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, seq)
);

-- Worker processes, for the dashboard and for naming lease owners.
CREATE TABLE workers (
    id           text PRIMARY KEY,
    host         text NOT NULL,
    pid          integer NOT NULL,
    slots        integer NOT NULL,
    busy         integer NOT NULL DEFAULT 0,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE workers, task_events, tasks;
