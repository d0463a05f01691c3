-- +goose Up
-- The SQL side of the one event codec: a stored event object with the keys
-- store/event_batch.go's appendEvents writes. Statements that write an
-- event themselves (a submit, a claim, a rescue) build it here, not each
-- with its own jsonb_build_object. They always give a message and data, so
-- leaving out empty ones is the Go side's alone. One plain SQL expression,
-- STABLE like jsonb_build_object, so the planner inlines it.
-- +goose StatementBegin
CREATE FUNCTION flightdeck_event(type text, status text, message text, data jsonb) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT jsonb_build_object('type', type, 'status', status, 'message', message, 'data', data)
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION flightdeck_event(text, text, text, jsonb);
