package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/internal/notify"
	"flightdeck/workflow/task"
)

// ErrTerminal: the task already ended; nothing changes.
var ErrTerminal = errors.New("task already ended")

// TaskCancel cancels a task of one of teamIDs on behalf of actor.
//
// A pending task that never ran is cancelled at once. A running (or
// compensating) one gets cancel_requested_at and a NOTIFY on task_cancel so
// its lease holder on any node stops the step and compensates; the heartbeat
// sees the flag too, in case the notification is lost. A parked task
// (awaiting approval or input, paused, or re-queued after it ran steps) goes to
// compensating without a lease, so a worker claims it and undoes its steps.
// A terminal task is ErrTerminal. Cancel racing completion: whichever
// transaction locks the row first wins; the loser sees the other's state.
func (s *Store) TaskCancel(ctx context.Context, teamIDs []string, id, actor string) (*task.Task, error) {
	if !validUUID(id) {
		return nil, ErrNotFound
	}
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var state, teamID string
		var ranSteps bool
		// A task parked before its first step (an environment's freeze) was
		// claimed, but ran nothing: its steps say so.
		err := tx.QueryRow(ctx, `
			SELECT t.state, t.team_id, t.started_at IS NOT NULL AND (t.kind <> 'deploy' OR EXISTS (
				SELECT 1 FROM task_steps s WHERE s.task_id = t.id AND s.state <> 'pending')) FROM tasks t
			WHERE t.id = $1 AND t.team_id = ANY($2) FOR UPDATE`, id, teamIDs).Scan(&state, &teamID, &ranSteps)
		if err != nil {
			return interpretError(err)
		}
		st := task.State(state)
		data, _ := json.Marshal(map[string]string{"by": actor})
		effect, why := task.CancelOf(st, ranSteps)
		switch {
		case st.Terminal():
			return ErrTerminal
		case effect == task.CancelRefused:
			return fmt.Errorf("%w: %s", ErrConflict, why)
		}
		if err := auditAddTx(ctx, tx, teamID, actor, "task.cancelled", id, map[string]any{"state": st}); err != nil {
			return err
		}
		if effect == task.CancelRequest {
			if err := appendStateEvents(ctx, tx, id, stateChange{Cancel: true, Error: ptr("cancelled by " + actor), KeepErr: true},
				[]task.Event{{Type: task.EventTaskState, Status: task.StatusCancelled, Message: "Cancel requested by " + actor, Data: data}}); err != nil {
				return err
			}
			noteTx(tx, notify.Notes{Cancel: []string{id}})
			return nil
		}
		return cancelWaitingTx(ctx, tx, id, st, effect, "by "+actor, data)
	})
	if err != nil {
		return nil, err
	}
	return s.TaskGet(ctx, teamIDs, id)
}

// cancelWaitingTx cancels a task that waits (pending, scheduled, paused,
// awaiting a decision or an answer) in tx, which locked its row, as
// task.CancelOf's effect says: one that never ran a step ends cancelled
// at once; one that did goes to compensating without a lease, so a worker
// claims it and undoes its steps. how says who cancelled it ("by …").
func cancelWaitingTx(ctx context.Context, tx pgx.Tx, id string, st task.State, effect task.CancelEffect, how string, data []byte) error {
	// A pending approval or question can no longer be decided: the cancel
	// ended it.
	if _, err := tx.Exec(ctx, `UPDATE approvals SET state = 'cancelled' WHERE task_id = $1 AND state = 'pending'`, id); err != nil {
		return interpretError(err)
	}
	if effect == task.CancelNow {
		// the steps stored at submit will never run (skipPending)
		msg := "Cancelled " + how + " before it ran"
		return appendStateEvents(ctx, tx, id, stateChange{State: task.StateCancelled, Error: ptr("cancelled " + how + " before it ran"),
			Cancel: true, Resumed: st == task.StatePaused, Steps: skipPending},
			[]task.Event{
				{Type: task.EventTaskState, Status: task.StatusLog, Message: msg, Data: data},
				{Type: task.EventTaskCancelled, Status: task.StatusCancelled, Message: msg, Data: data},
			})
	}
	if _, err := tx.Exec(ctx, `UPDATE agent_questions SET state = 'expired' WHERE task_id = $1 AND state = 'pending'`, id); err != nil {
		return interpretError(err)
	}
	if err := appendStateEvents(ctx, tx, id, stateChange{State: task.StateCompensating, Cancel: true, Error: ptr("cancelled " + how), KeepErr: true,
		Resumed: st == task.StatePaused},
		[]task.Event{{Type: task.EventTaskState, Status: task.StatusCompensating, Message: "Cancelled " + how + "; undoing completed steps", Data: data}}); err != nil {
		return err
	}
	noteTx(tx, readyNote)
	return nil
}

// TaskCancelStanding applies the cancels that a person asked for while a
// worker held the task but that the worker did not act on before it
// parked the task (the request reached it after its last write, or it
// died between): each such waiting task is cancelled as a cancel of a
// waiting task is (cancelWaitingTx). ids limits it to those tasks (the
// pool, right after it parked them); nil sweeps up to limit of any. It
// returns how many it cancelled.
func (s *Store) TaskCancelStanding(ctx context.Context, ids []string, limit int) (int, error) {
	n := 0
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT t.id, t.state, t.started_at IS NOT NULL AND (t.kind <> 'deploy' OR EXISTS (
				SELECT 1 FROM task_steps s WHERE s.task_id = t.id AND s.state <> 'pending')) AS ran_steps
			FROM tasks t
			WHERE t.cancel_requested_at IS NOT NULL AND t.lease_token IS NULL
				AND t.state IN ('pending', 'scheduled', 'paused', 'awaiting_approval', 'awaiting_input')
				AND ($1::uuid[] IS NULL OR t.id = ANY($1))
			ORDER BY t.id LIMIT $2
			FOR UPDATE OF t SKIP LOCKED`, ids, limit)
		if err != nil {
			return interpretError(err)
		}
		found, err := pgx.CollectRows(rows, pgx.RowToStructByName[standingRow])
		if err != nil {
			return interpretError(err)
		}
		data, _ := json.Marshal(map[string]string{"reason": "cancel requested while it ran"})
		for _, f := range found {
			effect, _ := task.CancelOf(task.State(f.State), f.RanSteps)
			if err := cancelWaitingTx(ctx, tx, f.ID, task.State(f.State), effect, "(requested while it ran)", data); err != nil {
				return err
			}
		}
		n = len(found)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("error applying standing cancels: %w", err)
	}
	return n, nil
}

type standingRow struct {
	ID       string `db:"id"`
	State    string `db:"state"`
	RanSteps bool   `db:"ran_steps"`
}

// TaskSetPriority changes a non-terminal task's priority.
func (s *Store) TaskSetPriority(ctx context.Context, teamIDs []string, id string, p task.Priority, actor string) (*task.Task, error) {
	if !validUUID(id) {
		return nil, ErrNotFound
	}
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var state string
		if err := tx.QueryRow(ctx, `SELECT state FROM tasks WHERE id = $1 AND team_id = ANY($2) FOR UPDATE`, id, teamIDs).Scan(&state); err != nil {
			return interpretError(err)
		}
		if task.State(state).Terminal() {
			return ErrTerminal
		}
		data, _ := json.Marshal(map[string]string{"priority": p.String(), "by": actor})
		if err := appendStateEvents(ctx, tx, id, stateChange{Priority: p}, []task.Event{
			{Type: task.EventTaskState, Status: task.StatusLog, Message: fmt.Sprintf("Priority set to %s by %s", p, actor), Data: data},
		}); err != nil {
			return err
		}
		// A waiting task moved in the claim order: claimers look again.
		noteTx(tx, readyNote)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.TaskGet(ctx, teamIDs, id)
}

// stateChange is a change of a task's row made by a person or the system
// (not its worker): zero fields keep what is there. A terminal State also
// sets finished_at.
type stateChange struct {
	State    task.State    // "" keeps the state
	Error    *string       // the task's error
	KeepErr  bool          // with Error: only if the task has none yet
	Cancel   bool          // cancel_requested_at, if not set yet
	Priority task.Priority // 0 keeps the priority
	Pause    bool          // pause_requested_at, if not set yet
	// Resumed clears the pause request and a failed step's decision
	// (failed_step, decision_expires_at): the pause is over.
	Resumed  bool
	RunAfter *time.Time // nil keeps run_after
	// Steps move the task's steps from one state to another with it.
	Steps []StepStateChange
}

// skipPending skips the steps that never ran: a task cancelled before they
// did will not run them.
var skipPending = []StepStateChange{{Idx: AllSteps, From: []task.StepState{task.StepPending}, To: task.StepSkipped}}

// appendStateEvents applies c to task id (locked by tx) with events, through
// the one write that counts seqs (taskApply): a state change and its events
// commit together (invariant 6).
func appendStateEvents(ctx context.Context, tx pgx.Tx, id string, c stateChange, events []task.Event) error {
	_, err := taskApplyTx(ctx, tx, TaskWrite{ID: id, State: c.State, Error: c.Error, KeepErr: c.KeepErr, Cancel: c.Cancel,
		Priority: c.Priority, Pause: c.Pause, Resumed: c.Resumed, RunAfter: c.RunAfter, StepStates: c.Steps, Events: events})
	return err
}

// TaskResolve is an admin's answer to a task in needs_attention: retry runs
// the failed compensations again (the task goes back to compensating and a
// worker claims it); resolve marks it failed, saying who resolved it.
func (s *Store) TaskResolve(ctx context.Context, teamIDs []string, id, action, actor, comment string) (*task.Task, error) {
	if !validUUID(id) {
		return nil, ErrNotFound
	}
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var state, teamID string
		if err := tx.QueryRow(ctx, `SELECT state, team_id FROM tasks WHERE id = $1 AND team_id = ANY($2) FOR UPDATE`, id, teamIDs).Scan(&state, &teamID); err != nil {
			return interpretError(err)
		}
		if task.State(state) != task.StateNeedsAttention {
			return ErrConflict
		}
		data, _ := json.Marshal(map[string]string{"action": action, "by": actor, "comment": comment})
		if err := auditAddTx(ctx, tx, teamID, actor, "task.resolved", id, map[string]string{"action": action, "comment": comment}); err != nil {
			return err
		}
		if action == "retry" {
			// the failed compensations run again: their steps count as
			// completed, to be undone
			retry := []StepStateChange{{Idx: AllSteps, From: []task.StepState{task.StepCompensationFailed}, To: task.StepCompleted}}
			if err := appendStateEvents(ctx, tx, id, stateChange{State: task.StateCompensating, Steps: retry}, []task.Event{
				{Type: task.EventTaskState, Status: task.StatusCompensating, Message: "Compensation retried by " + actor, Data: data},
			}); err != nil {
				return err
			}
			noteTx(tx, readyNote)
			return nil
		}
		reason := "resolved by " + actor
		if comment != "" {
			reason += ": " + comment
		}
		return appendStateEvents(ctx, tx, id, stateChange{State: task.StateFailed, Error: &reason}, []task.Event{
			{Type: task.EventTaskFailed, Status: task.StatusError, Message: "Task failed: " + reason, Data: data},
		})
	})
	if err != nil {
		return nil, err
	}
	return s.TaskGet(ctx, teamIDs, id)
}

func ptr[T any](v T) *T { return &v }
