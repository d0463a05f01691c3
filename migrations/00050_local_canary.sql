-- +goose Up
-- A route's canary (contract §11): an instance beside the current one that
-- receives canary_weight percent of the route's requests. It lives on the
-- route row, as the current instance does, so every serve process splits
-- alike and a resumed task finds the split its steps left.
ALTER TABLE local_routes
    ADD COLUMN canary_id uuid REFERENCES local_instances (id) ON DELETE SET NULL,
    ADD COLUMN canary_weight smallint NOT NULL DEFAULT 0 CHECK (canary_weight BETWEEN 0 AND 100);

-- +goose Down
ALTER TABLE local_routes DROP COLUMN canary_weight, DROP COLUMN canary_id;
