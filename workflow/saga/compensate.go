package saga

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"flightdeck/internal/words"
	"flightdeck/store"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

// errCompensationFailed: a compensation still failed after its retries.
var errCompensationFailed = errors.New("a compensation failed")

// finishWithCompensation undoes the completed steps in reverse order and
// ends the task cancelled (cancel, rejection, expiry) or failed, or in
// needs_attention when a compensation keeps failing: never success.
func (rn *run) finishWithCompensation(cancelled bool, reason string) queue.Outcome {
	reason = redact(reason, rn.secrets) // it quotes the failed step's error
	if rn.j.Task.State != task.StateCompensating {
		data := map[string]any{"state": task.StateCompensating, "reason": reason}
		if err := rn.write(change{TaskState: task.StateCompensating, Events: []task.Event{
			{Type: task.EventTaskState, Status: task.StatusCompensating, Message: "Undoing completed steps: " + reason, Data: mustJSON(data)},
		}}); err != nil {
			return rn.interruptedOutcome(err)
		}
	}
	if err := rn.skipPending(); err != nil {
		return rn.interruptedOutcome(err)
	}
	rows := rn.compensable()
	err := rn.compensateRows(rows)
	switch {
	case errors.Is(err, errInterrupted):
		return rn.interruptedOutcome(err)
	case errors.Is(err, errCompensationFailed):
		return queue.Outcome{State: task.StateNeedsAttention, Error: reason + "; " + err.Error(),
			Message: "A compensation failed after its retries: a person must retry it or resolve the task"}
	case err != nil:
		return queue.Outcome{State: task.StateNeedsAttention, Error: reason + "; " + err.Error()}
	}
	if cancelled {
		return queue.Outcome{State: task.StateCancelled, Error: reason, Message: "Task cancelled: " + reason}
	}
	return queue.Outcome{State: task.StateFailed, Error: reason}
}

// skipPending records the steps the saga will never run, now that it
// undoes instead (contract §2: skipped), so nobody reads a step that never
// ran as one still to come. The rows ride with the next write.
func (rn *run) skipPending() error {
	var idx []int
	rn.mu.Lock()
	for i, r := range rn.steps {
		if r.State == task.StepPending {
			idx = append(idx, i)
		}
	}
	rn.mu.Unlock()
	slices.Sort(idx)
	for _, i := range idx {
		if err := rn.write(change{Idx: i, State: task.StepSkipped}); err != nil {
			return err
		}
	}
	return nil
}

// compensable lists the steps to undo, last completed first: completed ones,
// interrupted compensations, and failed or cancelled steps that asked for it.
func (rn *run) compensable() []store.StepRow {
	var rows []store.StepRow
	rn.mu.Lock()
	for _, r := range rn.steps {
		ps := rn.plan[r.Idx]
		switch r.State {
		case task.StepCompleted, task.StepCompensating, task.StepCompensationFailed:
			rows = append(rows, *r)
		case task.StepFailed, task.StepCancelled:
			if ps.Step.CompensateOnFailure {
				rows = append(rows, *r)
			}
		}
	}
	rn.mu.Unlock()
	byCompletionDesc(rows)
	return rows
}

// compensateRows runs each step's compensation with retries. It runs even
// after a cancel (that is its point); only a shutdown or a lost lease stops
// it, and a resumed run skips what is already compensated.
func (rn *run) compensateRows(rows []store.StepRow) error {
	ctx, cancel := context.WithCancel(context.WithoutCancel(rn.ctx))
	defer cancel()
	go func() {
		select {
		case <-rn.j.Stopping():
			cancel()
		case <-ctx.Done():
		}
	}()
	var failed []string
	for _, row := range rows {
		ps := rn.plan[row.Idx]
		comp := ps.Step.Compensate
		if comp == nil {
			continue // nothing to undo
		}
		// 0 means none, as for a step; a pipeline file that says nothing
		// gets CompensationRetriesDefault from the loader.
		retries := comp.Retries
		ok := false
		for try := 1; try <= retries+1; try++ {
			if rn.draining() {
				return errInterrupted // handed back compensating; the next owner goes on
			}
			// The attempt counts every try of this compensation, those of
			// an earlier run (a crash, an admin's retry) included, as a
			// resumed step's attempt does.
			attempt := rn.row(row.Idx).CompensationAttempt + 1
			if err := rn.write(change{Idx: row.Idx, State: task.StepCompensating, StartCompensation: true, Events: []task.Event{
				// started_at: when the undo really started (the event's own
				// time is its batched write's), for the run page's timeline.
				rn.event(ps, task.EventStepCompensating, task.StatusCompensating, comp.Action,
					fmt.Sprintf("Undoing %s with %s (try %d)", ps.Name, comp.Action, attempt),
					map[string]any{"try": attempt, "started_at": time.Now().UTC().Format(time.RFC3339Nano)}),
			}}); err != nil {
				return err
			}
			_, err := rn.execute(ctx, ps, comp.Action, comp.With, comp.Timeout, true, attempt, rn.row(row.Idx))
			if rn.j.StopCause() != nil {
				return errInterrupted
			}
			if err == nil {
				if err := rn.write(change{Idx: row.Idx, State: task.StepCompensated, Finish: true, Events: []task.Event{
					rn.event(ps, task.EventStepCompensated, task.StatusCompensating, comp.Action, fmt.Sprintf("Undid %s", ps.Name), nil),
				}}); err != nil {
					return err
				}
				ok = true
				break
			}
			if try <= retries {
				wait := rn.r.retryWait(try, err)
				rn.j.Emit(rn.event(ps, task.EventStepRetrying, task.StatusCompensating, comp.Action,
					fmt.Sprintf("Undoing %s failed (%s); retrying in %s", ps.Name, err, words.Duration(wait)), retryData(err, wait, try, retries+1)))
				select {
				case <-ctx.Done():
					return errInterrupted
				case <-time.After(wait):
				}
				continue
			}
			msg := err.Error()
			if werr := rn.write(change{Idx: row.Idx, State: task.StepCompensationFailed, Finish: true, Error: &msg, Events: []task.Event{
				rn.event(ps, task.EventStepFailed, task.StatusError, comp.Action, fmt.Sprintf("Undoing %s failed: %s", ps.Name, msg), nil),
			}}); werr != nil {
				return werr
			}
		}
		if !ok {
			failed = append(failed, ps.Name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %v", errCompensationFailed, failed)
	}
	return nil
}
