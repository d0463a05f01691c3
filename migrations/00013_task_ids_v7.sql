-- +goose Up
-- Task ids in time order (UUID version 7, RFC 9562), not random (version 4).
-- The queue works tasks roughly in the order they were made, and every
-- write of a run adds an entry keyed by the task id: the task row's new
-- version in its primary key and list indexes, the event batch, the step
-- rows. With random ids those entries land on random pages of indexes that
-- grow with the table, so a long backlog dirtied a different page per entry
-- (and a full-page image in the WAL after each checkpoint); in time order
-- they land on the few pages at the indexes' working edge.
--
-- Layout: 48 bits of Unix milliseconds, then gen_random_uuid()'s bits with
-- the version nibble turned from 4 into 7 (bits 52 and 53): 74 random
-- bits. Ids stay unguessable; only the creation time is readable from
-- them, as created_at already is to anyone who may read the task. Within
-- one millisecond ids are in random order, which keeps a bulk insert's
-- entries on a few neighbouring pages all the same. One expression, so
-- PostgreSQL inlines it: about 3 µs more per row than gen_random_uuid().
-- +goose StatementBegin
CREATE FUNCTION flightdeck_uuid_v7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                placing substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                FROM 1 FOR 6),
            52, 1), 53, 1),
        'hex')::uuid
$$;
-- +goose StatementEnd
ALTER TABLE tasks ALTER COLUMN id SET DEFAULT flightdeck_uuid_v7();

-- +goose Down
ALTER TABLE tasks ALTER COLUMN id SET DEFAULT gen_random_uuid();
DROP FUNCTION flightdeck_uuid_v7();
