-- +goose Up
-- Large outputs, stored in chunks so neither writing nor reading needs the
-- whole thing in memory.
CREATE TABLE artifacts (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    task_id      uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    team_id      uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    step_idx     integer NOT NULL DEFAULT 0,
    name         text NOT NULL,
    content_type text NOT NULL DEFAULT 'text/plain; charset=utf-8',
    bytes        bigint NOT NULL DEFAULT 0,
    sha256       text NOT NULL DEFAULT '',
    summary      text NOT NULL DEFAULT '',
    excerpt      text NOT NULL DEFAULT '',
    truncated    boolean NOT NULL DEFAULT false,
    complete     boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX artifacts_task_id_created_at_idx ON artifacts (task_id, created_at);

CREATE TABLE artifact_chunks (
    artifact_id uuid NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    seq         integer NOT NULL,
    data        bytea NOT NULL,
    PRIMARY KEY (artifact_id, seq)
);

-- +goose Down
DROP TABLE artifact_chunks, artifacts;
