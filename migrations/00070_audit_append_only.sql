-- +goose Up
-- The audit log is append-only at the database (issue 38): the app role
-- owns the table, so a REVOKE would be its own to undo, and a superuser
-- URL ignores grants; a guard trigger holds for every role. An entry is
-- never changed; it is deleted only with its team (ON DELETE CASCADE from
-- teams, whose row is gone by the time the cascade reaches the entry).
-- +goose StatementBegin
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND OLD.team_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM teams WHERE id = OLD.team_id) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END $$;
-- +goose StatementEnd
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- +goose Down
DROP TRIGGER audit_log_no_truncate ON audit_log;
DROP TRIGGER audit_log_append_only ON audit_log;
DROP FUNCTION audit_log_append_only();
