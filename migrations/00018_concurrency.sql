-- +goose Up
-- Concurrency keys (contract §6): at most one running task per key and
-- team. A task's key is rendered when it is submitted; the task that holds
-- it has the key's row here, from its claim until it is terminal. The
-- primary key is what makes the rule hold across processes and racing
-- claims: a claim takes a key only by inserting its row, and of two claims
-- that try, one inserts and the other finds it taken.
ALTER TABLE tasks ADD COLUMN concurrency_key text;
-- the unfinished tasks of a key (cancel_in_progress supersedes them)
CREATE INDEX tasks_team_id_concurrency_key_idx ON tasks (team_id, concurrency_key)
    WHERE concurrency_key IS NOT NULL AND state NOT IN ('completed', 'failed', 'cancelled');

CREATE TABLE concurrency_holds (
    team_id uuid NOT NULL,
    key     text NOT NULL,
    task_id uuid NOT NULL UNIQUE REFERENCES tasks (id) ON DELETE CASCADE,
    PRIMARY KEY (team_id, key)
);

-- A terminal task gives its key up, whichever write ended it (a worker's
-- outcome, a cancel, a resolve, the rescuer), in the same transaction.
-- +goose StatementBegin
CREATE FUNCTION tasks_release_concurrency() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM concurrency_holds WHERE task_id = NEW.id;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER tasks_release_concurrency AFTER UPDATE OF state ON tasks FOR EACH ROW
    WHEN (NEW.concurrency_key IS NOT NULL AND NEW.state IN ('completed', 'failed', 'cancelled'))
    EXECUTE FUNCTION tasks_release_concurrency();

-- +goose Down
DROP TRIGGER tasks_release_concurrency ON tasks;
DROP FUNCTION tasks_release_concurrency();
DROP TABLE concurrency_holds;
ALTER TABLE tasks DROP COLUMN concurrency_key;
