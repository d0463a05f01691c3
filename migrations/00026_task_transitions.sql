-- +goose Up
-- The database refuses a task state change that workflow/task does not allow
-- (invariant 11: which state may follow which is one rule,
-- task.CanTransition), whichever statement makes it. The trigger's WHEN asks
-- flightdeck_transition_ok, which store.Migrate rewrites from the task
-- package's table after the migrations (here it allows every change until
-- then). It is one plain SQL expression, inlined into the WHEN, so a state
-- change costs a lookup in a constant array, not a function call; the
-- trigger's function runs only for a change the rule refuses.
CREATE FUNCTION flightdeck_transition_ok(from_state text, to_state text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT true $$;

-- +goose StatementBegin
-- Test fixtures that fake a task's history in one UPDATE (a task that
-- ended last month) set flightdeck.fixture in their transaction
-- (testfactory.Fixture); nothing else does.
CREATE FUNCTION tasks_refuse_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('flightdeck.fixture', true) = 'on' THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'a % task cannot become %', OLD.state, NEW.state
        USING ERRCODE = 'check_violation', CONSTRAINT = 'task_transition';
END $$;
-- +goose StatementEnd

CREATE TRIGGER tasks_check_transition BEFORE UPDATE OF state ON tasks FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state AND NOT flightdeck_transition_ok(OLD.state, NEW.state))
    EXECUTE FUNCTION tasks_refuse_transition();

-- +goose Down
DROP TRIGGER tasks_check_transition ON tasks;
DROP FUNCTION tasks_refuse_transition();
DROP FUNCTION flightdeck_transition_ok(text, text);
