package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/workflow/task"
)

// ErrForbidden: the caller may not do this (self-approval, wrong role).
var ErrForbidden = errors.New("forbidden")

// Approval is a request for a person's decision on a step.
type Approval struct {
	ID          string             `json:"id"`
	TaskID      string             `json:"-"`
	StepIdx     int                `json:"step_index"`
	Step        string             `json:"step"`
	Attempt     int                `json:"attempt"`
	Kind        string             `json:"kind"`
	Detail      json.RawMessage    `json:"detail,omitempty"`
	Roles       []string           `json:"roles"`
	State       task.ApprovalState `json:"state"`
	RequestedAt time.Time          `json:"requested_at"`
	ExpiresAt   time.Time          `json:"expires_at"`
	DecidedBy   *string            `json:"decided_by"`
	DecidedAt   *time.Time         `json:"decided_at,omitempty"`
	Comment     *string            `json:"comment"`
}

const approvalColumns = `id, task_id, step_idx, step_name, attempt, kind, detail, roles, state, requested_at, expires_at, decided_by, decided_at, comment`

func scanApproval(row pgx.Row) (*Approval, error) {
	var a Approval
	var detail []byte
	if err := row.Scan(&a.ID, &a.TaskID, &a.StepIdx, &a.Step, &a.Attempt, &a.Kind, &detail, &a.Roles, &a.State,
		&a.RequestedAt, &a.ExpiresAt, &a.DecidedBy, &a.DecidedAt, &a.Comment); err != nil {
		return nil, interpretError(err)
	}
	if len(detail) > 0 && string(detail) != "{}" {
		a.Detail = detail
	}
	a.RequestedAt, a.ExpiresAt = a.RequestedAt.UTC(), a.ExpiresAt.UTC()
	return &a, nil
}

// ApprovalLatest returns the newest approval of a task's step, or ErrNotFound.
func (s *Store) ApprovalLatest(ctx context.Context, taskID string, stepIdx int) (*Approval, error) {
	return scanApproval(s.pool.QueryRow(ctx, `SELECT `+approvalColumns+` FROM approvals
		WHERE task_id = $1 AND step_idx = $2 ORDER BY requested_at DESC, attempt DESC LIMIT 1`, taskID, stepIdx))
}

// ApprovalList returns a visible task's approvals, oldest first.
func (s *Store) ApprovalList(ctx context.Context, teamIDs []string, taskID string) ([]Approval, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+approvalColumns+` FROM approvals
		WHERE task_id = $1 AND team_id = ANY($2) ORDER BY requested_at, step_idx`, taskID, teamIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []Approval{}
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, interpretError(rows.Err())
}

// ApprovalDecideParams are a person's decision.
type ApprovalDecideParams struct {
	TeamIDs    []string
	TaskID     string
	ApprovalID string
	Approve    bool
	ActorID    string
	Actor      string // email
	ActorRole  string // the actor's role in the task's team
	Comment    string
}

// ApprovalDecide records exactly one decision: the task row is locked, the
// approval must be pending and unexpired and the task awaiting approval, so
// racing deciders serialise and all but the first get ErrConflict. Nobody
// decides on a task they created, and the role must be one the step allows
// (ErrForbidden). An approval the task does not have (any id, UUID or not)
// is not pending either: ErrConflict, as the contract answers it; only an
// unknown task is ErrNotFound. Approve puts the task back to pending; reject
// sends it to compensating with a cancel, so a worker undoes its steps and it
// ends cancelled with the reason.
func (s *Store) ApprovalDecide(ctx context.Context, p ApprovalDecideParams) (*Approval, error) {
	if !validUUID(p.TaskID) {
		return nil, ErrNotFound
	}
	var out *Approval
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var state, createdBy, teamID string
		err := tx.QueryRow(ctx, `SELECT state, created_by, team_id FROM tasks WHERE id = $1 AND team_id = ANY($2) FOR UPDATE`,
			p.TaskID, p.TeamIDs).Scan(&state, &createdBy, &teamID)
		if err != nil {
			return interpretError(err)
		}
		var a *Approval
		err = ErrNotFound // an id that is not a UUID names no approval
		if validUUID(p.ApprovalID) {
			a, err = scanApproval(tx.QueryRow(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = $1 AND task_id = $2 FOR UPDATE`, p.ApprovalID, p.TaskID))
		}
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("%w: the task has no such approval", ErrConflict)
		}
		if err != nil {
			return err
		}
		if ok, why := task.MayDecide(task.ApprovalKind(a.Kind), a.Roles, createdBy, p.ActorID, p.ActorRole); !ok {
			return fmt.Errorf("%w: %s", ErrForbidden, why)
		}
		if a.State != task.ApprovalPending || state != string(task.StateAwaitingApproval) {
			return fmt.Errorf("%w: approval is %s", ErrConflict, a.State)
		}
		var expired bool
		if err := tx.QueryRow(ctx, `SELECT expires_at < now() FROM approvals WHERE id = $1`, a.ID).Scan(&expired); err != nil {
			return interpretError(err)
		}
		if expired {
			return fmt.Errorf("%w: approval expired", ErrConflict)
		}
		decision, taskState, msg := task.ApprovalApproved, task.StatePending, fmt.Sprintf("%s approved %s", p.Actor, a.Step)
		change := stateChange{State: task.StatePending}
		if !p.Approve && a.Kind == "tool_call" {
			// The agent resumes and tells the model the call was refused.
			decision, msg = task.ApprovalRejected, fmt.Sprintf("%s rejected %s", p.Actor, a.Step)
		} else if !p.Approve {
			decision, taskState = task.ApprovalRejected, task.StateCompensating
			reason := fmt.Sprintf("approval of %s rejected by %s", a.Step, p.Actor)
			if p.Comment != "" {
				reason += ": " + p.Comment
			}
			msg = reason
			change = stateChange{State: task.StateCompensating, Cancel: true, Error: &reason}
		}
		if _, err := tx.Exec(ctx, `UPDATE approvals SET state = $2, decided_by = $3, decided_at = now(), comment = NULLIF($4, '') WHERE id = $1`,
			a.ID, string(decision), p.Actor, p.Comment); err != nil {
			return interpretError(err)
		}
		data, _ := json.Marshal(map[string]any{"approval_id": a.ID, "decision": decision, "by": p.Actor, "comment": p.Comment})
		stateData, _ := json.Marshal(map[string]any{"state": taskState})
		if err := appendStateEvents(ctx, tx, p.TaskID, change, []task.Event{
			{Type: task.EventApprovalDecided, Status: task.StatusApproval, Step: a.StepIdx, StepName: a.Step, Message: msg, Data: data},
			{Type: task.EventTaskState, Status: task.StatusLog, Message: "Task " + string(taskState), Data: stateData},
		}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO audit_log (team_id, actor, action, target, data) VALUES ($1, $2, $3, $4, $5)`,
			teamID, p.Actor, "approval."+string(decision), p.TaskID, data); err != nil {
			return interpretError(err)
		}
		noteTx(tx, readyNote)
		a.State, a.DecidedBy = decision, &p.Actor
		if p.Comment != "" {
			a.Comment = &p.Comment
		}
		out = a
		return nil
	})
	return out, err
}

// ApprovalExpire expires pending approvals past their time and sends their
// tasks to compensating with a cancel (they end cancelled, saying why).
func (s *Store) ApprovalExpire(ctx context.Context) (int, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, task_id, step_name FROM approvals WHERE state = 'pending' AND expires_at < now() LIMIT 100`)
	if err != nil {
		return 0, interpretError(err)
	}
	type due struct{ id, taskID, step string }
	var dues []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.id, &d.taskID, &d.step); err != nil {
			rows.Close()
			return 0, interpretError(err)
		}
		dues = append(dues, d)
	}
	rows.Close()
	n := 0
	for _, d := range dues {
		err := s.withTx(ctx, func(tx pgx.Tx) error {
			var state string
			if err := tx.QueryRow(ctx, `SELECT state FROM tasks WHERE id = $1 FOR UPDATE`, d.taskID).Scan(&state); err != nil {
				return interpretError(err)
			}
			tag, err := tx.Exec(ctx, `UPDATE approvals SET state = 'expired' WHERE id = $1 AND state = 'pending' AND expires_at < now()`, d.id)
			if err != nil || tag.RowsAffected() == 0 || state != string(task.StateAwaitingApproval) {
				return interpretError(err)
			}
			reason := fmt.Sprintf("approval of %s expired", d.step)
			data, _ := json.Marshal(map[string]any{"approval_id": d.id, "decision": "expired"})
			if err := appendStateEvents(ctx, tx, d.taskID, stateChange{State: task.StateCompensating, Cancel: true, Error: &reason}, []task.Event{
				{Type: task.EventApprovalDecided, Status: task.StatusApproval, StepName: d.step, Message: reason, Data: data},
			}); err != nil {
				return err
			}
			n++
			noteTx(tx, readyNote)
			return interpretError(err)
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
