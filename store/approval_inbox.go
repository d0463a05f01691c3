package store

import (
	"context"
	"encoding/json"

	"flightdeck/workflow/task"
)

// InboxItem is a pending approval that a person may decide, with what they
// need to decide it without opening the task.
type InboxItem struct {
	Approval
	TeamID    string
	Team      string
	Kind      string // the task's kind
	Pipeline  string
	Params    json.RawMessage
	CreatedBy string // email of the task's creator
}

// inboxQuery reads the pending, unexpired approvals of userID's teams on
// tasks awaiting approval, oldest first, with the person's role in the
// team and the task's creator: what task.MayDecide needs. Pending
// approvals are few, and each team's are read from
// approvals_team_id_pending_idx.
const inboxQuery = `
	SELECT a.id, a.task_id, a.step_idx, a.step_name, a.attempt, a.kind, a.detail, a.roles, a.state,
	       a.requested_at, a.expires_at, a.decided_by, a.decided_at, a.comment,
	       t.team_id, tm.name, t.kind, t.pipeline, t.params, u.email, m.role, t.created_by
	FROM memberships m
	JOIN approvals a ON a.team_id = m.team_id AND a.state = 'pending'
	JOIN tasks t ON t.id = a.task_id
	JOIN teams tm ON tm.id = t.team_id
	JOIN users u ON u.id = t.created_by
	WHERE m.user_id = $1 AND a.expires_at > now() AND t.state = 'awaiting_approval'
	ORDER BY a.requested_at, a.id`

// ApprovalInbox lists the pending, unexpired approvals that userID may
// decide, oldest first: on tasks of their teams that are awaiting approval,
// by task.MayDecide (the rule ApprovalDecide enforces), so everything listed
// can be decided. The rule is applied here, not in SQL, so it lives once;
// pending approvals are few.
func (s *Store) ApprovalInbox(ctx context.Context, userID string, limit int) ([]InboxItem, error) {
	return s.approvalsPending(ctx, userID, limit, func(_ InboxItem, mayDecide, _ bool) bool { return mayDecide })
}

// ApprovalWaitingOn lists the pending approvals on tasks userID created
// that someone else must decide (four eyes), oldest first: the creator
// sees their deploy wait, and for whom.
func (s *Store) ApprovalWaitingOn(ctx context.Context, userID string, limit int) ([]InboxItem, error) {
	return s.approvalsPending(ctx, userID, limit, func(_ InboxItem, mayDecide, mine bool) bool { return mine && !mayDecide })
}

// ApprovalInboxCount is how many approvals ApprovalInbox would list (the
// navigation's badge): one query, nothing but the rule's inputs kept.
func (s *Store) ApprovalInboxCount(ctx context.Context, userID string) (int, error) {
	items, err := s.approvalsPending(ctx, userID, maxInboxCount, func(_ InboxItem, mayDecide, _ bool) bool { return mayDecide })
	return len(items), err
}

// maxInboxCount bounds the badge's count (shown as 99+ beyond).
const maxInboxCount = 100

// approvalsPending runs inboxQuery and keeps, up to limit, the items keep
// accepts, told whether userID may decide each and whether they created
// its task.
func (s *Store) approvalsPending(ctx context.Context, userID string, limit int, keep func(it InboxItem, mayDecide, mine bool) bool) ([]InboxItem, error) {
	if !validUUID(userID) {
		return nil, ErrNotFound
	}
	rows, err := s.pool.Query(ctx, inboxQuery, userID)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []InboxItem{}
	for rows.Next() && len(out) < limit {
		var it InboxItem
		var detail []byte
		var role, creatorID string
		if err := rows.Scan(&it.ID, &it.TaskID, &it.StepIdx, &it.Step, &it.Attempt, &it.Approval.Kind, &detail, &it.Roles, &it.State,
			&it.RequestedAt, &it.ExpiresAt, &it.DecidedBy, &it.DecidedAt, &it.Comment,
			&it.TeamID, &it.Team, &it.Kind, &it.Pipeline, &it.Params, &it.CreatedBy, &role, &creatorID); err != nil {
			return nil, interpretError(err)
		}
		ok, _ := task.MayDecide(task.ApprovalKind(it.Approval.Kind), it.Roles, creatorID, userID, role)
		if !keep(it, ok, creatorID == userID) {
			continue
		}
		if len(detail) > 0 && string(detail) != "{}" {
			it.Detail = detail
		}
		it.RequestedAt, it.ExpiresAt = it.RequestedAt.UTC(), it.ExpiresAt.UTC()
		out = append(out, it)
	}
	return out, interpretError(rows.Err())
}
