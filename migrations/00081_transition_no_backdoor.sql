-- +goose Up
-- The transition trigger (00026) had a way around it: a transaction that set
-- flightdeck.fixture was let through, for tests that fake a history. A
-- production trigger keeps no such setting; the tests' fixtures switch the
-- trigger off in their own transaction instead (testfactory.Fixture: ALTER
-- TABLE … DISABLE TRIGGER, undone before it commits), as the table's owner.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION tasks_refuse_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a % task cannot become %', OLD.state, NEW.state
        USING ERRCODE = 'check_violation', CONSTRAINT = 'task_transition';
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION tasks_refuse_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('flightdeck.fixture', true) = 'on' THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'a % task cannot become %', OLD.state, NEW.state
        USING ERRCODE = 'check_violation', CONSTRAINT = 'task_transition';
END $$;
-- +goose StatementEnd
