package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

// errLoser: a group step stopped because its group already joined.
var errLoser = errors.New("stopped: the group already joined")

// stage runs one stage. It returns a park outcome when the stage waits for
// approvals, or an error when it failed (or the task was interrupted).
func (rn *run) stage(st pipeline.Stage) (*queue.Outcome, error) {
	var todo []pipeline.PlannedStep
	for _, ps := range st.Steps {
		switch rn.row(ps.Index).State {
		case task.StepCompleted, task.StepSkipped:
		default:
			todo = append(todo, ps)
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	// The stage before is stored first; that write also learns of a cancel
	// or pause asked for meanwhile (queue.Job.Flush), so the checks below
	// see it even if its notification went astray.
	if err := rn.settle(); err != nil {
		return nil, err
	}
	if err := context.Cause(rn.ctx); err != nil {
		return nil, interruption(rn, err)
	}
	if rn.draining() {
		return nil, errInterrupted
	}
	if rn.j.PauseRequested() {
		// between steps (or groups): the one before has ended
		return &queue.Outcome{State: task.StatePaused, Message: "Paused before " + todo[0].Name}, nil
	}
	if park, err := rn.approvals(todo); park != nil || err != nil {
		return park, err
	}
	if !st.Group {
		return nil, rn.runStep(rn.ctx, todo[0])
	}
	return nil, rn.group(st, todo)
}

// approvals parks the task until every step of todo that needs a person's
// decision has an approved one.
func (rn *run) approvals(todo []pipeline.PlannedStep) (*queue.Outcome, error) {
	var need []store.ApprovalStep
	var roles []string
	var timeout time.Duration
	for _, ps := range todo {
		ap := ps.Step.Approval
		if ap == nil {
			continue
		}
		if ap.When != "" {
			v, err := renderString(ap.When, rn.data(ps))
			if err != nil {
				return nil, fmt.Errorf("step %s: approval.when: %w", ps.Name, err)
			}
			if strings.TrimSpace(v) != "true" {
				continue
			}
		}
		a, err := rn.j.Reads().ApprovalLatest(rn.ctx, rn.j.Task.ID, ps.Index)
		switch {
		case err == nil && a.State == task.ApprovalApproved:
			continue
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return nil, fmt.Errorf("step %s: reading its approval: %w", ps.Name, err)
		}
		// The approver sees the public params only: the run's are real.
		detail, _ := json.Marshal(map[string]any{"action": ps.Step.Action, "params": rn.p.Public(rn.params)})
		need = append(need, store.ApprovalStep{Idx: ps.Index, Name: ps.Name, Attempt: rn.j.Task.Attempt, Detail: detail})
		roles = ap.Roles
		timeout = max(timeout, ap.Timeout)
	}
	if len(need) == 0 {
		return nil, nil
	}
	if len(roles) == 0 {
		roles = pipeline.ApprovalRolesDefault
	}
	if timeout <= 0 {
		timeout = pipeline.ApprovalTimeoutDefault
	}
	return &queue.Outcome{State: task.StateAwaitingApproval, Message: "Waiting for approval",
		Approvals: &store.ApprovalPark{Steps: need, Roles: roles, Timeout: timeout}}, nil
}

// group runs a stage's steps at once (at most Concurrency) and joins them:
// all (every step), any (the first), quorum (N). When the join is decided
// the remaining steps are stopped; completed losers of any/quorum are
// compensated at once.
func (rn *run) group(st pipeline.Stage, todo []pipeline.PlannedStep) error {
	need := len(st.Steps) // join all
	switch st.Join {
	case "any":
		need = 1
	case "quorum":
		need = st.Quorum
	}
	done := 0 // already completed before this run
	for _, ps := range st.Steps {
		if rn.row(ps.Index).State == task.StepCompleted {
			done++
		}
	}
	gctx, cancel := context.WithCancelCause(rn.ctx)
	defer cancel(nil)
	var timedOut <-chan time.Time
	if st.Timeout > 0 {
		t := time.NewTimer(time.Duration(st.Timeout))
		defer t.Stop()
		timedOut = t.C
	}
	limit := st.Concurrency
	if limit <= 0 {
		limit = len(todo)
	}
	sem := make(chan struct{}, limit)
	type result struct {
		ps  pipeline.PlannedStep
		err error
	}
	results := make(chan result, len(todo))
	var wg sync.WaitGroup
	// One dispatcher starts the steps in list order as slots free up (a
	// for_each's items in the order of the list): goroutines racing for
	// the semaphore started them in random order.
	wg.Go(func() {
		for i, ps := range todo {
			select {
			case sem <- struct{}{}:
			case <-gctx.Done():
			}
			if gctx.Err() != nil {
				for _, rest := range todo[i:] {
					results <- result{rest, rn.notStarted(gctx, rest)}
				}
				return
			}
			wg.Go(func() {
				defer func() { <-sem }()
				results <- result{ps, rn.runStep(gctx, ps)}
			})
		}
	})
	succeeded, failed := done, 0
	var firstErr error
	var winners []pipeline.PlannedStep
	decided := succeeded >= need
	partial := false
	for range todo {
		var res result
		select {
		case res = <-results:
		case <-timedOut:
			// Join with what finished: stop the rest, then count.
			partial, timedOut = true, nil
			cancel(errLoser)
			res = <-results
		}
		switch {
		case res.err == nil:
			succeeded++
			winners = append(winners, res.ps)
		case errors.Is(res.err, errInterrupted):
			firstErr = res.err
		case errors.Is(res.err, errLoser):
		default:
			failed++
			if firstErr == nil {
				firstErr = res.err
			}
		}
		if !decided && (succeeded >= need || failed > len(st.Steps)-need) {
			decided = true
			cancel(errLoser) // the join is decided: stop the others
		}
	}
	wg.Wait()
	if errors.Is(firstErr, errInterrupted) {
		return firstErr
	}
	if err := context.Cause(rn.ctx); err != nil {
		return interruption(rn, err)
	}
	ok := succeeded >= need || (partial && succeeded > 0 && st.Join == "all")
	if !ok {
		if firstErr == nil {
			firstErr = fmt.Errorf("group timed out with %d of %d steps completed", succeeded, need)
		}
		return fmt.Errorf("parallel group failed (join %s): %w", joinName(st), firstErr)
	}
	// Losers of any/quorum that completed anyway are undone now.
	if st.Join != "all" && succeeded > need {
		var extra []store.StepRow
		for _, w := range winners[max(0, need-done):] {
			extra = append(extra, rn.row(w.Index))
		}
		if failedComp := rn.compensateRows(extra); failedComp != nil {
			return failedComp
		}
	}
	return nil
}

// notStarted ends a group step that was stopped before it began. When its
// group already joined, the step will never run: it is recorded cancelled,
// as a loser stopped while running is. When the task itself is stopping,
// the step is left as it is for whoever runs the task next.
func (rn *run) notStarted(gctx context.Context, ps pipeline.PlannedStep) error {
	if !errors.Is(context.Cause(gctx), errLoser) || rn.ctx.Err() != nil {
		return errLoser
	}
	if err := rn.write(change{Idx: ps.Index, State: task.StepCancelled, Finish: true, Events: []task.Event{
		rn.event(ps, task.EventStepFailed, task.StatusCancelled, ps.Step.Action, fmt.Sprintf("Step %s not started: %s", ps.Name, errLoser), nil),
	}}); err != nil {
		return err
	}
	return errLoser
}

func joinName(st pipeline.Stage) string {
	if st.Join == "quorum" {
		return fmt.Sprintf("quorum:%d", st.Quorum)
	}
	return st.Join
}

// interruption maps the task context's cause to the error a stage returns.
func interruption(rn *run, cause error) error {
	if rn.j.StopCause() != nil {
		return errInterrupted
	}
	switch {
	case errors.Is(cause, queue.ErrCancelRequested):
		return errors.New("cancelled")
	case errors.Is(cause, queue.ErrDeadline):
		return errors.New("deadline exceeded")
	}
	return errInterrupted
}
