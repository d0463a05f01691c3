-- +goose Up
-- Environments that protect themselves (contract §9).
-- A deploy's environment (the value of its pipeline's environment param),
-- kept at submit: freezes hold and release a team's waiting deploys by it.
ALTER TABLE tasks ADD COLUMN environment text;
-- A promotion names the deploy whose params it repeats.
ALTER TABLE tasks ADD COLUMN promoted_from uuid REFERENCES tasks (id) ON DELETE SET NULL;
-- An admin's break-glass override of a freeze or the promotion gate:
-- {"by","reason","at"}, shown on the task.
ALTER TABLE tasks ADD COLUMN override jsonb;
-- The promotion gate asks when a version last completed in a target: the
-- completed-deploys index walks the target, this one its environment.
CREATE INDEX tasks_team_id_environment_waiting_idx ON tasks (team_id, environment)
    WHERE environment IS NOT NULL AND state IN ('pending', 'scheduled', 'awaiting_approval');

-- Freezes made through the API, per team and environment. A freeze ended
-- early keeps its row (ended_at) for the audit trail.
CREATE TABLE freezes (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    environment text NOT NULL,
    from_at     timestamptz NOT NULL DEFAULT now(),
    until_at    timestamptz NOT NULL,
    reason      text NOT NULL,
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    ended_at    timestamptz,
    ended_by    text,
    CHECK (until_at > from_at)
);
CREATE INDEX freezes_team_id_until_at_idx ON freezes (team_id, until_at) WHERE ended_at IS NULL;

-- An environment's reviewers: one approval with `required` approvals in
-- `decisions` ([{"by","decision","comment","at"}]); `changes` is what a
-- deploy changes from the environment's current one (every approval of a
-- deploy carries it).
ALTER TABLE approvals ADD COLUMN required integer NOT NULL DEFAULT 1;
ALTER TABLE approvals ADD COLUMN decisions jsonb NOT NULL DEFAULT '[]';
ALTER TABLE approvals ADD COLUMN changes jsonb;
ALTER TABLE approvals DROP CONSTRAINT approvals_kind_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_kind_check CHECK (kind IN ('step', 'tool_call', 'environment'));

-- The audit trail is read newest first per team, by type.
CREATE INDEX audit_log_team_id_action_id_idx ON audit_log (team_id, action, id DESC);
CREATE INDEX audit_log_team_id_id_idx ON audit_log (team_id, id DESC);

-- +goose Down
DROP INDEX audit_log_team_id_id_idx;
DROP INDEX audit_log_team_id_action_id_idx;
DELETE FROM approvals WHERE kind = 'environment';
ALTER TABLE approvals DROP CONSTRAINT approvals_kind_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_kind_check CHECK (kind IN ('step', 'tool_call'));
ALTER TABLE approvals DROP COLUMN changes;
ALTER TABLE approvals DROP COLUMN decisions;
ALTER TABLE approvals DROP COLUMN required;
DROP TABLE freezes;
DROP INDEX tasks_team_id_environment_waiting_idx;
ALTER TABLE tasks DROP COLUMN override;
ALTER TABLE tasks DROP COLUMN promoted_from;
ALTER TABLE tasks DROP COLUMN environment;
