// Package saga runs deploy tasks: a pipeline's steps in order, each through
// an action, with events for every transition. This first cut runs steps
// sequentially and supports the built-in "noop" action; persisted step
// state, retries, approvals, parallel groups and reverse compensation build
// on it (issue 4).
package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

// Action performs one step's side effect.
type Action func(ctx context.Context, in ActionInput) (json.RawMessage, error)

// ActionInput is what an action gets.
type ActionInput struct {
	Task *task.Task
	Step pipeline.Step
	// Index is the step's 1-based position.
	Index int
}

// Runner is the queue handler for deploy tasks.
type Runner struct {
	catalog *pipeline.Catalog
	actions map[string]Action
}

// NewRunner returns a runner over the catalog's pipelines with the built-in
// actions.
func NewRunner(c *pipeline.Catalog) *Runner {
	return &Runner{catalog: c, actions: map[string]Action{
		"noop": func(context.Context, ActionInput) (json.RawMessage, error) { return json.RawMessage(`{}`), nil },
	}}
}

// Run implements queue.Handler.
func (r *Runner) Run(ctx context.Context, j *queue.Job) queue.Outcome {
	t := j.Task
	p, ok := r.catalog.Get(t.Pipeline)
	if !ok {
		return queue.Outcome{State: task.StateFailed, Error: fmt.Sprintf("pipeline %q is not available on this server", t.Pipeline)}
	}
	total := len(p.Steps)
	outputs := map[string]json.RawMessage{}
	for i, step := range p.Steps {
		idx := i + 1
		if err := context.Cause(ctx); err != nil {
			return interrupted(err)
		}
		act, ok := r.actions[step.Action]
		if !ok {
			msg := fmt.Sprintf("action %s is not available on this server", step.Action)
			j.Emit(task.Event{Type: task.EventStepFailed, Status: task.StatusError, Step: idx, TotalStep: total, StepName: step.Name, Tool: step.Action, Message: msg})
			return queue.Outcome{State: task.StateFailed, Error: msg}
		}
		j.Emit(task.Event{Type: task.EventStepStarted, Status: task.StatusToolCall, Step: idx, TotalStep: total, StepName: step.Name, Tool: step.Action,
			Message: fmt.Sprintf("Step %d/%d %s started", idx, total, step.Name)})
		out, err := act(ctx, ActionInput{Task: t, Step: step, Index: idx})
		if err != nil {
			if cause := context.Cause(ctx); cause != nil {
				return interrupted(cause)
			}
			j.Emit(task.Event{Type: task.EventStepFailed, Status: task.StatusError, Step: idx, TotalStep: total, StepName: step.Name, Tool: step.Action, Message: err.Error()})
			return queue.Outcome{State: task.StateFailed, Error: fmt.Sprintf("step %s failed: %v", step.Name, err)}
		}
		outputs[step.Name] = out
		j.Emit(task.Event{Type: task.EventStepCompleted, Status: task.StatusToolResult, Step: idx, TotalStep: total, StepName: step.Name, Tool: step.Action,
			Message: fmt.Sprintf("Step %d/%d %s completed", idx, total, step.Name)})
	}
	res, _ := json.Marshal(map[string]any{"steps": outputs})
	return queue.Outcome{State: task.StateCompleted, Result: res, Message: "Task completed"}
}

// interrupted maps a context cause to how the task is left.
func interrupted(cause error) queue.Outcome {
	switch {
	case errors.Is(cause, queue.ErrCancelRequested):
		return queue.Outcome{State: task.StateCancelled, Error: "cancelled", Message: "Task cancelled"}
	case errors.Is(cause, queue.ErrDeadline):
		return queue.Outcome{State: task.StateFailed, Error: "deadline exceeded"}
	default: // shutdown or lease lost: hand it back / drop
		return queue.Outcome{State: task.StatePending}
	}
}
