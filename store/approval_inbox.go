package store

import (
	"context"
	"encoding/json"
)

// InboxItem is a pending approval that a person may decide, with what they
// need to decide it without opening the task.
type InboxItem struct {
	Approval
	Team      string
	Kind      string // the task's kind
	Pipeline  string
	Params    json.RawMessage
	CreatedBy string // email of the task's creator
}

// ApprovalInbox lists the pending, unexpired approvals that userID may
// decide, oldest first: on tasks of their teams that are awaiting approval,
// by the rules of ApprovalDecide (a role the approval names; for pipeline
// steps never one's own task; an agent's tool call also by the task's
// creator), so everything listed can be decided.
func (s *Store) ApprovalInbox(ctx context.Context, userID string, limit int) ([]InboxItem, error) {
	if !validUUID(userID) {
		return nil, ErrNotFound
	}
	rows, err := s.pool.Query(ctx, `
		SELECT a.id, a.task_id, a.step_idx, a.step_name, a.attempt, a.kind, a.detail, a.roles, a.state,
		       a.requested_at, a.expires_at, a.decided_by, a.decided_at, a.comment,
		       tm.name, t.kind, t.pipeline, t.params, u.email
		FROM memberships m
		JOIN approvals a ON a.team_id = m.team_id AND a.state = 'pending'
		JOIN tasks t ON t.id = a.task_id
		JOIN teams tm ON tm.id = t.team_id
		JOIN users u ON u.id = t.created_by
		WHERE m.user_id = $1 AND a.expires_at > now() AND t.state = 'awaiting_approval'
		  AND CASE a.kind
		      -- an agent's tool call: its creator (deployer or above) or a role it names
		      WHEN 'tool_call' THEN m.role = ANY(a.roles) OR (t.created_by = $1 AND m.role <> 'viewer')
		      -- a pipeline step: a role it names, never on one's own task (four eyes)
		      ELSE m.role = ANY(a.roles) AND t.created_by <> $1 END
		ORDER BY a.requested_at, a.id
		LIMIT $2`, userID, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []InboxItem{}
	for rows.Next() {
		var it InboxItem
		var detail []byte
		if err := rows.Scan(&it.ID, &it.TaskID, &it.StepIdx, &it.Step, &it.Attempt, &it.Approval.Kind, &detail, &it.Roles, &it.State,
			&it.RequestedAt, &it.ExpiresAt, &it.DecidedBy, &it.DecidedAt, &it.Comment,
			&it.Team, &it.Kind, &it.Pipeline, &it.Params, &it.CreatedBy); err != nil {
			return nil, interpretError(err)
		}
		if len(detail) > 0 && string(detail) != "{}" {
			it.Detail = detail
		}
		it.RequestedAt, it.ExpiresAt = it.RequestedAt.UTC(), it.ExpiresAt.UTC()
		out = append(out, it)
	}
	return out, interpretError(rows.Err())
}
