package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/internal/notify"
	"flightdeck/internal/words"
	"flightdeck/workflow/task"
)

// ErrInvalid: the request is incomplete for what it asks (a skip's reason).
var ErrInvalid = errors.New("invalid")

// Run control (contract §10): a person pauses a task and resumes it; a
// paused task holds no worker. These are a person's writes: the state
// change and its events commit together (appendStateEvents), and the
// audit entry follows the commit.

// TaskPause pauses a task of one of teamIDs on behalf of actor. A pending
// or scheduled task is paused at once. A running one is asked to pause:
// pause_requested_at, and a wake-up on task_pause so its worker (on any
// node; the heartbeat is the backup) parks it once the step or group it
// is in ends. A terminal task is ErrTerminal; a task already paused or
// asked to, or waiting on something else (an approval, an answer, its
// compensation), is ErrConflict.
func (s *Store) TaskPause(ctx context.Context, teamIDs []string, id, actor string) (*task.Task, error) {
	if !validUUID(id) {
		return nil, ErrNotFound
	}
	var teamID string
	var from task.State
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var state, kind string
		var requested bool
		err := tx.QueryRow(ctx, `SELECT state, kind, team_id, pause_requested_at IS NOT NULL FROM tasks
			WHERE id = $1 AND team_id = ANY($2) FOR UPDATE`, id, teamIDs).Scan(&state, &kind, &teamID, &requested)
		if err != nil {
			return interpretError(err)
		}
		from = task.State(state)
		data, _ := json.Marshal(map[string]any{"by": actor, "from": from})
		effect, why := task.PauseOf(from, task.Kind(kind), requested)
		switch {
		case from.Terminal():
			return ErrTerminal
		case effect == task.PauseNow:
			// Its run_after stays: a resume before then waits it out.
			return appendStateEvents(ctx, tx, id, stateChange{State: task.StatePaused, Resumed: true}, []task.Event{
				{Type: task.EventTaskPaused, Status: task.StatusLog, Message: "Paused by " + actor, Data: data}})
		case effect == task.PauseRequest:
			data, _ = json.Marshal(map[string]any{"by": actor, "pause_requested": true})
			if err := appendStateEvents(ctx, tx, id, stateChange{Pause: true}, []task.Event{
				{Type: task.EventTaskState, Status: task.StatusLog, Message: "Pause requested by " + actor + "; the task pauses when its current step ends", Data: data}}); err != nil {
				return err
			}
			noteTx(tx, notify.Notes{Pause: []string{id}})
			return nil
		default:
			return fmt.Errorf("%w: %s", ErrConflict, why)
		}
	})
	if err != nil {
		return nil, err
	}
	if err := s.AuditAdd(ctx, teamID, actor, "task.paused", id, map[string]any{"from": from}); err != nil {
		return nil, fmt.Errorf("error recording the pause in the audit log: %w", err)
	}
	return s.TaskGet(ctx, teamIDs, id)
}

// TaskResumeParams are a person's resume of a paused task.
type TaskResumeParams struct {
	TeamIDs   []string
	ID        string
	Action    task.ResumeAction // "" is continue
	Comment   string
	ActorID   string
	Actor     string // email
	ActorRole string // the actor's role in the task's team
}

// TaskResume resumes a paused task, exactly once: the row is locked and
// must be paused, so of two people deciding at once the second gets
// ErrConflict. Who may take which action is task.MayResume's rule
// (ErrForbidden, ErrConflict, ErrInvalid). continue, retry and skip put
// the task back to pending (or scheduled while a run_after it waited for
// is still ahead) and a worker goes on: at the next step, at the failed
// step's next attempt (same idempotency key), or past the failed step,
// which is marked skipped and so never compensated. rollback sends it to
// compensating: a worker undoes its completed steps and it ends failed.
func (s *Store) TaskResume(ctx context.Context, p TaskResumeParams) (*task.Task, error) {
	if !validUUID(p.ID) {
		return nil, ErrNotFound
	}
	if p.Action == "" {
		p.Action = task.ResumeContinue
	}
	var teamID string
	var failed *task.FailedStep
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var state, createdBy string
		var failedRaw []byte
		var waits bool
		err := tx.QueryRow(ctx, `SELECT state, team_id, created_by, failed_step, COALESCE(GREATEST(run_after, held_until) > now(), false) FROM tasks
			WHERE id = $1 AND team_id = ANY($2) FOR UPDATE`, p.ID, p.TeamIDs).Scan(&state, &teamID, &createdBy, &failedRaw, &waits)
		if err != nil {
			return interpretError(err)
		}
		st := task.State(state)
		if st.Terminal() {
			return ErrTerminal
		}
		if st != task.StatePaused {
			return fmt.Errorf("%w: the task is %s, not paused", ErrConflict, st)
		}
		if len(failedRaw) > 0 {
			failed = new(task.FailedStep)
			if err := json.Unmarshal(failedRaw, failed); err != nil {
				return fmt.Errorf("error reading the failed step of task %s: %w", p.ID, err)
			}
		}
		switch refusal, why := task.MayResume(p.Action, failed != nil, createdBy, p.ActorID, p.ActorRole, p.Comment); refusal {
		case task.ResumeConflict:
			return fmt.Errorf("%w: %s", ErrConflict, why)
		case task.ResumeForbidden:
			return fmt.Errorf("%w: %s", ErrForbidden, why)
		case task.ResumeInvalid:
			return fmt.Errorf("%w: %s", ErrInvalid, why)
		}
		d := map[string]any{"action": p.Action, "by": p.Actor}
		if p.Comment != "" {
			d["comment"] = p.Comment
		}
		ev := task.Event{Type: task.EventTaskResumed, Status: task.StatusLog, Message: "Resumed by " + p.Actor}
		if failed != nil {
			d["step"] = failed.Name
			ev.Step, ev.StepName = failed.Index, failed.Name
		}
		next := task.StatePending
		if waits {
			next = task.StateScheduled // its time has not come yet
		}
		change := stateChange{State: next, Resumed: true}
		switch p.Action {
		case task.ResumeRetry:
			ev.Message = fmt.Sprintf("%s retries %s (attempt %d)", p.Actor, failed.Name, failed.Attempt+1)
		case task.ResumeSkip:
			ev.Message = fmt.Sprintf("%s skipped %s: %s", p.Actor, failed.Name, p.Comment)
			// the task row is locked: its steps do not change under us
			var failedNow bool
			err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM task_steps WHERE task_id = $1 AND idx = $2 AND state IN ('failed', 'cancelled'))`,
				p.ID, failed.Index).Scan(&failedNow)
			if err != nil {
				return interpretError(err)
			}
			if !failedNow {
				return fmt.Errorf("%w: step %s is not failed", ErrConflict, failed.Name)
			}
			change.Steps = []StepStateChange{{Idx: failed.Index, From: []task.StepState{task.StepFailed, task.StepCancelled}, To: task.StepSkipped}}
		case task.ResumeRollback:
			ev.Message = fmt.Sprintf("%s rolls back after %s failed", p.Actor, failed.Name)
			reason := fmt.Sprintf("step %s failed: %s; rolled back by %s", failed.Name, failed.Error, p.Actor)
			if p.Comment != "" {
				reason += ": " + p.Comment
			}
			change = stateChange{State: task.StateCompensating, Error: &reason, Resumed: true}
		}
		data, _ := json.Marshal(d)
		ev.Data = data
		stateData, _ := json.Marshal(map[string]any{"state": change.State})
		if err := appendStateEvents(ctx, tx, p.ID, change, []task.Event{ev,
			{Type: task.EventTaskState, Status: stateStatus(change.State), Message: "Task " + string(change.State), Data: stateData},
		}); err != nil {
			return err
		}
		if change.State != task.StateScheduled {
			noteTx(tx, readyNote)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	detail := map[string]any{"action": p.Action, "comment": p.Comment}
	if failed != nil {
		detail["step"] = failed.Name
	}
	if err := s.AuditAdd(ctx, teamID, p.Actor, "task.resumed", p.ID, detail); err != nil {
		return nil, fmt.Errorf("error recording the resume in the audit log: %w", err)
	}
	if p.Action == task.ResumeSkip {
		if err := s.AuditAdd(ctx, teamID, p.Actor, "step.skipped", p.ID, detail); err != nil {
			return nil, fmt.Errorf("error recording the skip in the audit log: %w", err)
		}
	}
	return s.TaskGet(ctx, p.TeamIDs, p.ID)
}

func stateStatus(s task.State) task.Status {
	if s == task.StateCompensating {
		return task.StatusCompensating
	}
	return task.StatusLog
}

// TaskDecisionExpire rolls back paused tasks whose failed step's decision
// is overdue (contract §10: decision_timeout, default 1 h): each goes to
// compensating, a worker undoes its completed steps, and it ends failed
// saying why. Due tasks are picked, then each is changed in a transaction
// of its own that checks again under the row lock, so a decision made
// meanwhile wins and the task is rolled back at most once. The
// maintenance loop of any node calls it (TaskMaintain).
func (s *Store) TaskDecisionExpire(ctx context.Context) (int, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM tasks
		WHERE state = 'paused' AND decision_expires_at < now() ORDER BY decision_expires_at LIMIT 100`)
	if err != nil {
		return 0, interpretError(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, interpretError(err)
	}
	n := 0
	for _, id := range ids {
		var teamID string
		var failed task.FailedStep
		var expired time.Time
		err := s.withTx(ctx, func(tx pgx.Tx) error {
			var failedRaw []byte
			err := tx.QueryRow(ctx, `SELECT team_id, failed_step, decision_expires_at FROM tasks
				WHERE id = $1 AND state = 'paused' AND decision_expires_at < now() FOR UPDATE`, id).Scan(&teamID, &failedRaw, &expired)
			if errors.Is(err, pgx.ErrNoRows) {
				teamID = ""
				return nil // decided meanwhile
			}
			if err != nil {
				return interpretError(err)
			}
			_ = json.Unmarshal(failedRaw, &failed)
			reason := fmt.Sprintf("step %s failed: %s; no decision by %s, rolled back", failed.Name, failed.Error, words.Stamp(expired))
			data, _ := json.Marshal(map[string]any{"action": task.ResumeRollback, "by": "system", "reason": "decision timed out", "step": failed.Name})
			stateData, _ := json.Marshal(map[string]any{"state": task.StateCompensating})
			if err := appendStateEvents(ctx, tx, id, stateChange{State: task.StateCompensating, Error: &reason, Resumed: true}, []task.Event{
				{Type: task.EventTaskResumed, Status: task.StatusLog, Step: failed.Index, StepName: failed.Name,
					Message: "No decision on " + failed.Name + " in time; rolling back", Data: data},
				{Type: task.EventTaskState, Status: task.StatusCompensating, Message: "Task compensating", Data: stateData},
			}); err != nil {
				return err
			}
			noteTx(tx, readyNote)
			return nil
		})
		if err != nil {
			return n, err
		}
		if teamID == "" {
			continue
		}
		n++
		if err := s.AuditAdd(ctx, teamID, "system", "task.resumed", id,
			map[string]any{"action": task.ResumeRollback, "step": failed.Name, "reason": "decision timed out"}); err != nil {
			return n, fmt.Errorf("error recording a rollback in the audit log: %w", err)
		}
	}
	return n, nil
}
