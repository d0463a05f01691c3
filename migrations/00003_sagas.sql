-- +goose Up
-- Saga state: one row per pipeline step of a deploy task (parallel and
-- for_each branches included, numbered in file order). A resumed task reads
-- these to skip completed steps and re-run the interrupted one with the same
-- idempotency key.
CREATE TABLE task_steps (
    task_id              uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    idx                  integer NOT NULL,
    name                 text NOT NULL,
    state                text NOT NULL DEFAULT 'pending' CHECK (state IN (
                             'pending', 'running', 'completed', 'failed', 'cancelled', 'skipped',
                             'compensating', 'compensated', 'compensation_failed')),
    attempt              integer NOT NULL DEFAULT 0,
    idempotency_key      text NOT NULL,
    output               jsonb,
    error                text,
    started_at           timestamptz,
    finished_at          timestamptz,
    compensation_attempt integer NOT NULL DEFAULT 0,
    compensated_at       timestamptz,
    PRIMARY KEY (task_id, idx)
);

-- Approvals are bound to task, step and attempt: a decision for an earlier
-- attempt cannot release a later one.
CREATE TABLE approvals (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    task_id      uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    team_id      uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    step_idx     integer NOT NULL,
    step_name    text NOT NULL,
    attempt      integer NOT NULL,
    kind         text NOT NULL DEFAULT 'step' CHECK (kind IN ('step', 'tool_call')),
    detail       jsonb NOT NULL DEFAULT '{}',
    roles        text[] NOT NULL DEFAULT '{approver,admin}',
    state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'approved', 'rejected', 'expired')),
    requested_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    decided_by   text,
    decided_at   timestamptz,
    comment      text,
    UNIQUE (task_id, step_idx, attempt)
);
CREATE INDEX approvals_team_id_pending_idx ON approvals (team_id, requested_at) WHERE state = 'pending';
CREATE INDEX approvals_expires_at_idx ON approvals (expires_at) WHERE state = 'pending';

-- +goose Down
DROP TABLE approvals, task_steps;
