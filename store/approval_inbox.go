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
	       t.team_id, tm.name, t.kind, t.pipeline, t.params, u.email, m.role, t.created_by,
	       a.required, a.decisions, a.changes, (SELECT me.email FROM users me WHERE me.id = $1)
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
	decide, _, err := s.ApprovalsPending(ctx, userID, limit)
	return decide, err
}

// ApprovalWaitingOn lists the pending approvals on tasks userID created
// that someone else must decide (four eyes), oldest first: the creator
// sees their deploy wait, and for whom.
func (s *Store) ApprovalWaitingOn(ctx context.Context, userID string, limit int) ([]InboxItem, error) {
	_, waiting, err := s.ApprovalsPending(ctx, userID, limit)
	return waiting, err
}

// ApprovalInboxCount is how many approvals ApprovalInbox would list (the
// navigation's badge).
func (s *Store) ApprovalInboxCount(ctx context.Context, userID string) (int, error) {
	decide, _, err := s.ApprovalsPending(ctx, userID, maxInboxCount)
	return len(decide), err
}

// maxInboxCount bounds the badge's count (shown as 99+ beyond).
const maxInboxCount = 100

// ApprovalsPending reads inboxQuery once for both of userID's lists, each
// up to limit: the approvals they may decide (ApprovalInbox) and those on
// tasks they created that someone else must decide (ApprovalWaitingOn).
func (s *Store) ApprovalsPending(ctx context.Context, userID string, limit int) (decide, waiting []InboxItem, err error) {
	if !validUUID(userID) {
		return nil, nil, ErrNotFound
	}
	rows, err := s.pool.Query(ctx, inboxQuery, userID)
	if err != nil {
		return nil, nil, interpretError(err)
	}
	defer rows.Close()
	decide, waiting = []InboxItem{}, []InboxItem{}
	for rows.Next() && (len(decide) < limit || len(waiting) < limit) {
		var it InboxItem
		var detail, decisions, changes []byte
		var role, creatorID, me string
		if err := rows.Scan(&it.ID, &it.TaskID, &it.StepIdx, &it.Step, &it.Attempt, &it.Approval.Kind, &detail, &it.Roles, &it.State,
			&it.RequestedAt, &it.ExpiresAt, &it.DecidedBy, &it.DecidedAt, &it.Comment,
			&it.TeamID, &it.Team, &it.Kind, &it.Pipeline, &it.Params, &it.CreatedBy, &role, &creatorID,
			&it.Required, &decisions, &changes, &me); err != nil {
			return nil, nil, interpretError(err)
		}
		if err := readApprovalJSON(&it.Approval, decisions, changes); err != nil {
			return nil, nil, err
		}
		mayDecide, _ := task.MayDecide(task.ApprovalKind(it.Approval.Kind), it.Roles, creatorID, userID, role)
		for _, d := range it.Decisions {
			if d.By == me {
				mayDecide = false // an environment's reviewer decides once
			}
		}
		list := &decide
		switch {
		case mayDecide:
		case creatorID == userID:
			list = &waiting
		default:
			continue
		}
		if len(*list) >= limit {
			continue
		}
		if len(detail) > 0 && string(detail) != "{}" {
			it.Detail = detail
		}
		it.RequestedAt, it.ExpiresAt = it.RequestedAt.UTC(), it.ExpiresAt.UTC()
		*list = append(*list, it)
	}
	return decide, waiting, interpretError(rows.Err())
}
