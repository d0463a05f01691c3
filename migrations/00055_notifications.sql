-- +goose Up
-- Notifications (contract §12). A person's email choices: a kind listed
-- false is off; a missing kind is on (so a kind added later reaches people
-- until they turn it off). Added with a constant default: no rewrite.
ALTER TABLE users ADD COLUMN notify_email jsonb NOT NULL DEFAULT '{}';

-- A team webhook's body: the Standard Webhooks JSON, or a Slack-compatible
-- incoming-webhook message (Slack, Mattermost, Rocket.Chat).
ALTER TABLE webhooks ADD COLUMN format text NOT NULL DEFAULT 'standard' CHECK (format IN ('standard', 'slack'));

-- One email to one person about one event. The unique key (task_id, seq,
-- user_id) is "one email per person and event": the mail dispatcher
-- following the outbox may see an event twice (a crash before its cursor
-- moved, two processes), and the second insert is nothing. The message is
-- rendered once, at enqueue, so every retry sends the same bytes (and the
-- same Message-ID). Claiming works like webhook_deliveries: a short
-- statement pushes next_attempt_at past the send timeout and sets a claim
-- token; only that claim records the outcome.
CREATE TABLE mail_deliveries (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    team_id         uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    task_id         uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    seq             integer NOT NULL,
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind            text NOT NULL CHECK (kind IN ('approval', 'decision', 'attention', 'ended')),
    recipient       text NOT NULL,
    subject         text NOT NULL,
    text_body       text NOT NULL,
    html_body       text NOT NULL,
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    window_start    timestamptz NOT NULL DEFAULT now(),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    claim_token     uuid,
    last_attempt_at timestamptz,
    last_error      text,
    sent_at         timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (task_id, seq, user_id)
);
CREATE INDEX mail_deliveries_due_idx ON mail_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX mail_deliveries_team_id_created_at_idx ON mail_deliveries (team_id, created_at DESC);

-- +goose Down
DROP TABLE mail_deliveries;
ALTER TABLE webhooks DROP COLUMN format;
ALTER TABLE users DROP COLUMN notify_email;
