package store

import (
	"context"
	"encoding/json"
)

// AuditAdd records who did what. teamID may be "" for actions outside a team.
func (s *Store) AuditAdd(ctx context.Context, teamID, actor, action, target string, data any) error {
	b, err := json.Marshal(data)
	if err != nil || data == nil {
		b = []byte("{}")
	}
	_, err = s.pool.Exec(ctx, `
		INSERT INTO audit_log (team_id, actor, action, target, data)
		VALUES (NULLIF($1, '')::uuid, $2, $3, $4, $5)`, teamID, actor, action, target, b)
	return interpretError(err)
}
