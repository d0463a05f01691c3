package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuditAdd records who did what. teamID may be "" for actions outside a
// team; target is the task's id for task-related actions ("" for none).
func (s *Store) AuditAdd(ctx context.Context, teamID, actor, action, target string, data any) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO audit_log (team_id, actor, action, target, data)
		VALUES (NULLIF($1, '')::uuid, $2, $3, $4, $5)`, teamID, actor, action, target, marshalDetail(data))
	return interpretError(err)
}

// auditAddTx is AuditAdd inside a transaction, so a decision and its
// audit entry commit together.
func auditAddTx(ctx context.Context, tx pgx.Tx, teamID, actor, action, target string, data any) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO audit_log (team_id, actor, action, target, data)
		VALUES (NULLIF($1, '')::uuid, $2, $3, $4, $5)`, teamID, actor, action, target, marshalDetail(data))
	return interpretError(err)
}

// AuditEntry is one line of a team's audit trail.
type AuditEntry struct {
	ID     int64           `json:"id,string" db:"id"`
	At     time.Time       `json:"at" db:"created_at"`
	Actor  string          `json:"actor" db:"actor"`
	Type   string          `json:"type" db:"action"`
	TaskID *string         `json:"task_id" db:"task_id"`
	Detail json.RawMessage `json:"detail" db:"data"`
}

// AuditListParams filter AuditList.
type AuditListParams struct {
	TeamID string
	Type   string // "" for every type
	Actor  string // "" for everyone
	Before int64  // an entry id: only older ones; 0 for the newest
	Limit  int
}

// AuditList returns a team's audit entries, newest first, and the cursor
// of the next page (0 when there is none).
func (s *Store) AuditList(ctx context.Context, p AuditListParams) ([]AuditEntry, int64, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	before := p.Before
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.pool.Query(ctx, `
		SELECT a.id, a.created_at, a.actor, a.action,
			-- a target is a task's id for task-related entries (a webhook's
			-- id is not a task's)
			(SELECT t.id::text FROM tasks t WHERE t.team_id = a.team_id AND t.id =
				CASE WHEN a.target ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN a.target::uuid END) AS task_id, a.data
		FROM audit_log a
		WHERE a.team_id = $1 AND ($2 = '' OR a.action = $2) AND ($3 = '' OR a.actor = $3) AND a.id < $4
		ORDER BY a.id DESC LIMIT $5`, p.TeamID, p.Type, p.Actor, before, limit+1)
	if err != nil {
		return nil, 0, fmt.Errorf("error listing the audit log: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[AuditEntry])
	if err != nil {
		return nil, 0, fmt.Errorf("error listing the audit log: %w", interpretError(err))
	}
	var next int64
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	for i := range out {
		out[i].At = out[i].At.UTC()
	}
	return out, next, nil
}
