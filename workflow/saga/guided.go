package saga

import (
	"context"
	"errors"

	"flightdeck/internal/words"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

// stepFailure: a step still failed after its retries (or failed for good).
type stepFailure struct {
	ps      pipeline.PlannedStep
	attempt int
	err     error
}

func (e *stepFailure) Error() string { return "step " + e.ps.Name + " failed: " + e.err.Error() }
func (e *stepFailure) Unwrap() error { return e.err }

// askOnFailure is guided failure (contract §10): when the deploy asks on
// failure and err is a step's failure (alone or inside its group), the
// task parks paused with that step, holding no worker, until a person
// decides to retry it, skip it or roll back, or the decision times out
// (store.TaskDecisionExpire rolls it back). Nil: compensate as usual (a
// cancel, a deadline, a group that timed out, a deploy that does not ask).
func (rn *run) askOnFailure(err error) *queue.Outcome {
	var sf *stepFailure
	if !errors.As(err, &sf) || !rn.r.cfg.Catalog.AsksOnFailure(rn.p, rn.params) || context.Cause(rn.ctx) != nil {
		return nil
	}
	fs := &task.FailedStep{Index: sf.ps.Index, Name: sf.ps.Name, Error: redact(sf.err.Error(), rn.secrets), Attempt: sf.attempt}
	timeout := rn.p.DecisionTimeoutOr()
	return &queue.Outcome{State: task.StatePaused, FailedStep: fs, DecisionTimeout: timeout,
		Message: "Step " + sf.ps.Name + " failed; waiting up to " + words.Duration(timeout) +
			" for a decision: retry, skip or roll back"}
}
