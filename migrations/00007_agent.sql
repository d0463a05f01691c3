-- +goose Up
-- Agent tasks: the loop's state, persisted after every step so a resumed
-- task continues from the last one without re-running completed tool calls.
-- The typed columns are what people and the UI look at; messages is the
-- model's conversation with large tool outputs replaced by artifact
-- references, and loop holds the loop's bookkeeping (pending calls, counters).
CREATE TABLE agent_states (
    task_id        uuid PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    goal           text NOT NULL,
    iteration      integer NOT NULL DEFAULT 0,
    budgets        jsonb NOT NULL DEFAULT '{}',
    spend          jsonb NOT NULL DEFAULT '{}',
    plan           jsonb NOT NULL DEFAULT '[]',
    facts          jsonb NOT NULL DEFAULT '[]',
    open_questions jsonb NOT NULL DEFAULT '[]',
    risk_flags     jsonb NOT NULL DEFAULT '[]',
    messages       jsonb NOT NULL DEFAULT '[]',
    loop           jsonb NOT NULL DEFAULT '{}',
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- An agent's question to a person (the ask_user tool). The task waits in
-- awaiting_input, holding no worker; exactly one answer is recorded.
CREATE TABLE agent_questions (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    task_id      uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    team_id      uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    call_seq     integer NOT NULL,
    text         text NOT NULL,
    state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'answered', 'expired')),
    answer       text,
    answered_by  text,
    asked_at     timestamptz NOT NULL DEFAULT now(),
    answered_at  timestamptz,
    UNIQUE (task_id, call_seq)
);

-- Notes people add to a running agent's context (WebSocket "message"); the
-- loop reads those with id above its cursor at its next iteration.
CREATE TABLE agent_notes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id    uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    author     text NOT NULL,
    text       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_notes_task_id_idx ON agent_notes (task_id, id);

-- +goose Down
DROP TABLE agent_notes, agent_questions, agent_states;
