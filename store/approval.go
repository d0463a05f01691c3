package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/workflow/task"
)

// ErrForbidden: the caller may not do this (self-approval, wrong role).
var ErrForbidden = errors.New("forbidden")

// ErrAlreadyApproved: this reviewer's approve is already among an
// environment approval's decisions, which is still pending (a conflict:
// another reviewer must decide).
var ErrAlreadyApproved = fmt.Errorf("%w: you already approved this deploy; another reviewer must decide", ErrConflict)

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
	// Required is how many distinct people must approve (an environment's
	// reviewers; 1 otherwise), Decisions who decided so far.
	Required  int        `json:"required"`
	Decisions []Decision `json:"decisions"`
	// Changes is what the deploy changes in its environment (nil for an
	// agent's tool call or a deploy without a target).
	Changes *task.Changes `json:"changes,omitempty"`
}

// Decision is one person's decision on an approval.
type Decision struct {
	By       string    `json:"by"`
	Decision string    `json:"decision"` // approve | reject
	Comment  string    `json:"comment"`
	At       time.Time `json:"at"`
}

// MarshalJSON writes the approval as the contract names it: an agent's
// tool call is of kind "tool" (stored as tool_call).
func (a Approval) MarshalJSON() ([]byte, error) {
	type plain Approval
	if a.Kind == string(task.ApprovalToolCall) {
		a.Kind = "tool"
	}
	if a.Decisions == nil {
		a.Decisions = []Decision{}
	}
	// an environment's approval is stored before every step (-1); the
	// contract's step_index has no negative values, and says 0 as before
	a.StepIdx = max(a.StepIdx, 0)
	return json.Marshal(plain(a))
}

// approvalRow is an approvals row, scanned by column name (SELECT * and
// RETURNING *: a new column is a field here).
type approvalRow struct {
	ID          string             `db:"id"`
	TaskID      string             `db:"task_id"`
	TeamID      string             `db:"team_id"`
	StepIdx     int                `db:"step_idx"`
	StepName    string             `db:"step_name"`
	Attempt     int                `db:"attempt"`
	Kind        string             `db:"kind"`
	Detail      []byte             `db:"detail"`
	Roles       []string           `db:"roles"`
	State       task.ApprovalState `db:"state"`
	RequestedAt time.Time          `db:"requested_at"`
	ExpiresAt   time.Time          `db:"expires_at"`
	DecidedBy   *string            `db:"decided_by"`
	DecidedAt   *time.Time         `db:"decided_at"`
	Comment     *string            `db:"comment"`
	Required    int                `db:"required"`
	Decisions   []byte             `db:"decisions"`
	Changes     []byte             `db:"changes"`
}

func (r *approvalRow) approval() (*Approval, error) {
	a := Approval{ID: r.ID, TaskID: r.TaskID, StepIdx: r.StepIdx, Step: r.StepName, Attempt: r.Attempt, Kind: r.Kind,
		Roles: r.Roles, State: r.State, RequestedAt: r.RequestedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
		DecidedBy: r.DecidedBy, DecidedAt: r.DecidedAt, Comment: r.Comment, Required: r.Required}
	if len(r.Detail) > 0 && string(r.Detail) != "{}" {
		a.Detail = r.Detail
	}
	if err := readApprovalJSON(&a, r.Decisions, r.Changes); err != nil {
		return nil, err
	}
	return &a, nil
}

// approvalOne reads the one approvals row a Query returns (none is ErrNotFound).
func approvalOne(rows pgx.Rows, err error) (*Approval, error) {
	r, err := oneByName[approvalRow](rows, err)
	if err != nil {
		return nil, err
	}
	return r.approval()
}

// ApprovalLatest returns the newest approval of a task's step, or ErrNotFound.
func (s *Store) ApprovalLatest(ctx context.Context, taskID string, stepIdx int) (*Approval, error) {
	return approvalOne(s.pool.Query(ctx, `SELECT * FROM approvals
		WHERE task_id = $1 AND step_idx = $2 ORDER BY requested_at DESC, attempt DESC LIMIT 1`, taskID, stepIdx))
}

// ApprovalList returns a visible task's approvals, oldest first.
func (s *Store) ApprovalList(ctx context.Context, teamIDs []string, taskID string) ([]Approval, error) {
	rows, err := s.pool.Query(ctx, `SELECT * FROM approvals
		WHERE task_id = $1 AND team_id = ANY($2) ORDER BY requested_at, step_idx`, taskID, teamIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[approvalRow])
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]Approval, len(rs))
	for i := range rs {
		a, err := rs[i].approval()
		if err != nil {
			return nil, err
		}
		out[i] = *a
	}
	return out, nil
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
		var runAfter *time.Time
		var now time.Time
		err := tx.QueryRow(ctx, `SELECT state, created_by, team_id, run_after, now() FROM tasks WHERE id = $1 AND team_id = ANY($2) FOR UPDATE`,
			p.TaskID, p.TeamIDs).Scan(&state, &createdBy, &teamID, &runAfter, &now)
		if err != nil {
			return interpretError(err)
		}
		var a *Approval
		err = ErrNotFound // an id that is not a UUID names no approval
		if validUUID(p.ApprovalID) {
			a, err = approvalOne(tx.Query(ctx, `SELECT * FROM approvals WHERE id = $1 AND task_id = $2 FOR UPDATE`, p.ApprovalID, p.TaskID))
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
		if a.Kind == string(task.ApprovalEnvironment) {
			var err error
			out, err = decideReviewer(ctx, tx, a, p, teamID, runAfter, now)
			return err
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
		if _, err := tx.Exec(ctx, `UPDATE approvals SET decisions = decisions || $2 WHERE id = $1`,
			a.ID, decisionJSON(p, now)); err != nil {
			return interpretError(err)
		}
		// The audit's decision is the verb a person chose, "approve" or
		// "reject", as an environment approval's decisions say it.
		if err := auditAddTx(ctx, tx, teamID, p.Actor, "approval.decided", p.TaskID, map[string]any{
			"approval_id": a.ID, "kind": a.Kind, "step": a.Step, "decision": decisionVerb(p.Approve), "comment": p.Comment}); err != nil {
			return err
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
		SELECT id, task_id, step_name, kind FROM approvals WHERE state = 'pending' AND expires_at < now() LIMIT 100`)
	if err != nil {
		return 0, interpretError(err)
	}
	type due struct{ id, taskID, step, kind string }
	var dues []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.id, &d.taskID, &d.step, &d.kind); err != nil {
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
			change := stateChange{State: task.StateCompensating, Cancel: true, Error: &reason}
			events := []task.Event{{Type: task.EventApprovalDecided, Status: task.StatusApproval, StepName: d.step, Message: reason, Data: data}}
			if d.kind == string(task.ApprovalEnvironment) {
				// no step ran: the task is cancelled at once
				reason = fmt.Sprintf("the reviewers of %s did not decide in time", d.step)
				change = stateChange{State: task.StateCancelled, Cancel: true, Error: &reason, Steps: skipPending}
				cancelData, _ := json.Marshal(map[string]any{"state": task.StateCancelled, "error": reason})
				events[0].Message = reason
				events = append(events, task.Event{Type: task.EventTaskCancelled, Status: task.StatusCancelled, Message: "Task cancelled: " + reason, Data: cancelData})
			}
			if err := appendStateEvents(ctx, tx, d.taskID, change, events); err != nil {
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

// decisionJSON is a decision as stored in approvals.decisions (a one-item array).
func decisionJSON(p ApprovalDecideParams, at time.Time) []byte {
	b, _ := json.Marshal([]Decision{{By: p.Actor, Decision: decisionVerb(p.Approve), Comment: p.Comment, At: at.UTC()}})
	return b
}

// decisionVerb is a decision in the contract's words (§9 decisions):
// approve or reject.
func decisionVerb(approve bool) string {
	if approve {
		return "approve"
	}
	return "reject"
}

// decideReviewer records one reviewer's decision on an environment's
// approval, in the caller's transaction (task and approval locked, the
// actor allowed). The same person twice is ErrConflict. An approve that
// makes the count approves it: the task goes on to its wait timer or
// run_at (scheduled) or to pending. A reject rejects it and cancels the
// task at once: no step ran, so there is nothing to undo.
func decideReviewer(ctx context.Context, tx pgx.Tx, a *Approval, p ApprovalDecideParams, teamID string, runAfter *time.Time, now time.Time) (*Approval, error) {
	for _, d := range a.Decisions {
		if d.By == p.Actor {
			return nil, ErrAlreadyApproved
		}
	}
	approvals := 1
	for _, d := range a.Decisions {
		if d.Decision == "approve" {
			approvals++
		}
	}
	env := a.Step
	var detail struct {
		Wait   int           `json:"wait_seconds"`
		Covers []CoveredStep `json:"covers"`
	}
	_ = json.Unmarshal(a.Detail, &detail)
	decision := "approve"
	approval := task.ApprovalPending
	var change stateChange
	var msg string
	events := []task.Event{}
	switch {
	case !p.Approve:
		decision, approval = "reject", task.ApprovalRejected
		reason := fmt.Sprintf("deploy to %s rejected by %s", env, p.Actor)
		if p.Comment != "" {
			reason += ": " + p.Comment
		}
		msg = reason
		change = stateChange{State: task.StateCancelled, Error: &reason, Cancel: true, Steps: skipPending}
		stateData, _ := json.Marshal(map[string]any{"state": task.StateCancelled, "error": reason})
		events = append(events, task.Event{Type: task.EventTaskCancelled, Status: task.StatusCancelled, Message: "Task cancelled: " + reason, Data: stateData})
	case approvals < a.Required:
		msg = fmt.Sprintf("%s approved the deploy to %s (%d of %d)", p.Actor, env, approvals, a.Required)
	default:
		approval = task.ApprovalApproved
		msg = fmt.Sprintf("%s approved the deploy to %s (%d of %d): approved", p.Actor, env, approvals, a.Required)
		next := task.StatePending
		var at *time.Time
		if detail.Wait > 0 {
			w := now.Add(time.Duration(detail.Wait) * time.Second)
			at = &w
		}
		if runAfter != nil && (at == nil || runAfter.After(*at)) {
			at = runAfter
		}
		if at != nil && at.After(now) {
			next = task.StateScheduled
		}
		change = stateChange{State: next, RunAfter: at}
		data := map[string]any{"state": next}
		stateMsg := "Task " + string(next)
		if next == task.StateScheduled {
			data["run_at"] = at.UTC()
			stateMsg = "Scheduled to run at " + at.UTC().Format(time.RFC3339)
		}
		stateData, _ := json.Marshal(data)
		events = append(events, task.Event{Type: task.EventTaskState, Status: task.StatusLog, Message: stateMsg, Data: stateData})
		covered, err := coverSteps(ctx, tx, a, teamID, detail.Covers, p.Actor, now)
		if err != nil {
			return nil, err
		}
		events = append(events, covered...)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE approvals SET decisions = decisions || $2, state = $3,
			decided_by = CASE WHEN $3 = 'pending' THEN decided_by ELSE $4 END,
			decided_at = CASE WHEN $3 = 'pending' THEN decided_at ELSE now() END,
			comment = CASE WHEN $3 = 'pending' THEN comment ELSE NULLIF($5, '') END
		WHERE id = $1`, a.ID, decisionJSON(p, now), string(approval), p.Actor, p.Comment); err != nil {
		return nil, interpretError(err)
	}
	data, _ := json.Marshal(map[string]any{"approval_id": a.ID, "kind": a.Kind, "decision": decision, "by": p.Actor,
		"comment": p.Comment, "approvals": approvals, "required": a.Required})
	events = append([]task.Event{{Type: task.EventApprovalDecided, Status: task.StatusApproval, StepName: env, Message: msg, Data: data}}, events...)
	if err := appendStateEvents(ctx, tx, p.TaskID, change, events); err != nil {
		return nil, err
	}
	if err := auditAddTx(ctx, tx, teamID, p.Actor, "approval.decided", p.TaskID, map[string]any{
		"approval_id": a.ID, "kind": a.Kind, "environment": env, "decision": decision, "comment": p.Comment}); err != nil {
		return nil, err
	}
	if change.State == task.StatePending {
		noteTx(tx, readyNote)
	}
	a.State = approval
	a.Decisions = append(a.Decisions, Decision{By: p.Actor, Decision: decision, Comment: p.Comment, At: now.UTC()})
	if approval != task.ApprovalPending {
		a.DecidedBy = &p.Actor
		if p.Comment != "" {
			a.Comment = &p.Comment
		}
	}
	return a, nil
}

// readApprovalJSON reads an approval's stored decisions and changes; the
// changed fields are worked out here, by one rule (task.DiffParams).
func readApprovalJSON(a *Approval, decisions, changes []byte) error {
	if len(decisions) > 0 {
		if err := json.Unmarshal(decisions, &a.Decisions); err != nil {
			return fmt.Errorf("error reading an approval's decisions: %w", err)
		}
	}
	if len(changes) > 0 {
		var c struct{ From, To map[string]any }
		if json.Unmarshal(changes, &c) == nil {
			d := task.DiffParams(c.From, c.To)
			a.Changes = &d
		}
	}
	return nil
}

// coverSteps records the step approvals an environment's approval a
// decides (contract §9, "decide once") as approved by its reviewers, in
// the transaction that approved it, with an event each: the run finds them
// approved and does not ask again. last is the reviewer whose approval
// made the count.
func coverSteps(ctx context.Context, tx pgx.Tx, a *Approval, teamID string, covers []CoveredStep, last string, now time.Time) ([]task.Event, error) {
	if len(covers) == 0 {
		return nil, nil
	}
	var by []string
	for _, d := range a.Decisions {
		if d.Decision == "approve" {
			by = append(by, d.By)
		}
	}
	by = append(by, last)
	decisions := make([]Decision, len(by))
	for i, b := range by {
		decisions[i] = Decision{By: b, Decision: "approve", Comment: "decided by the reviewers of " + a.Step, At: now.UTC()}
	}
	dj, _ := json.Marshal(decisions)
	var events []task.Event
	for _, c := range covers {
		var id string
		err := tx.QueryRow(ctx, `
			INSERT INTO approvals (task_id, team_id, step_idx, step_name, attempt, kind, roles, state, expires_at,
				decided_by, decided_at, comment, decisions, required, changes)
			VALUES ($1, $2, $3, $4, 1, 'step', $5, 'approved', now(), $6, now(), $7, $8, 1, $9)
			ON CONFLICT (task_id, step_idx, attempt) DO UPDATE SET state = 'approved', decided_by = EXCLUDED.decided_by,
				decided_at = now(), comment = EXCLUDED.comment, decisions = EXCLUDED.decisions
			RETURNING id`,
			a.TaskID, teamID, c.Idx, c.Name, c.Roles, strings.Join(by, ", "), "decided by the reviewers of "+a.Step, dj, a.Changes).Scan(&id)
		if err != nil {
			return nil, interpretError(err)
		}
		data, _ := json.Marshal(map[string]any{"approval_id": id, "kind": task.ApprovalStep, "decision": "approve", "by": by,
			"decided_by": a.ID})
		events = append(events, task.Event{Type: task.EventApprovalDecided, Status: task.StatusApproval, Step: c.Idx, StepName: c.Name,
			Message: fmt.Sprintf("The approval of %s is decided by the reviewers of %s (%s)", c.Name, a.Step, strings.Join(by, ", ")), Data: data})
	}
	return events, nil
}
