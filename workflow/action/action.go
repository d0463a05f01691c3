// Package action performs the side effects of pipeline steps: exec (argv,
// never a shell), http (with retries and a per-host circuit breaker), and
// the local provider (subpackage local). The saga runner renders a step's
// inputs and calls an Action; the action reports output lines as it goes and
// writes its whole output to Output (kept as an artifact).
package action

import (
	"context"
	"encoding/json"
	"io"
	"time"
)

// Input is everything an action gets for one attempt of one step (or of
// its compensation).
type Input struct {
	TaskID string
	Team   string // the team's name
	Step   string // the step's name
	// StepIndex is the step's 1-based position; Attempt is 1-based.
	StepIndex int
	Attempt   int
	// IdempotencyKey is the same for every attempt of this step in this
	// task (compensations: the step's key + ":compensate"). Actions pass it
	// on (env FLIGHTDECK_IDEMPOTENCY_KEY, header Idempotency-Key) or honour
	// it themselves, so a re-run after a crash has its effect once.
	IdempotencyKey string
	Compensating   bool
	// With holds the step's inputs, templates already rendered.
	With map[string]any
	// Params are the task's validated parameters (exec exports them as
	// FLIGHTDECK_PARAM_<NAME>).
	Params map[string]any
	// Dir is the pipeline's folder; exec's working directory defaults to it.
	Dir     string
	Timeout time.Duration
	// Log receives output lines as they are produced (step.log events).
	// Never nil.
	Log func(line string)
	// Output receives the whole output, to be kept as an artifact. Never nil.
	Output io.Writer
	// Previous is the output of this step's forward action, for its
	// compensation (what to undo).
	Previous json.RawMessage
}

// Action performs one kind of step.
type Action interface {
	// Run performs the action. It must return promptly once ctx is done
	// (killing what it started), and clean up its own partial work before
	// returning an error. Output is a small JSON document describing what
	// was done (ids, ports, versions), kept with the step.
	Run(ctx context.Context, in Input) (json.RawMessage, error)
}

// Func adapts a function to Action.
type Func func(ctx context.Context, in Input) (json.RawMessage, error)

// Run calls f.
func (f Func) Run(ctx context.Context, in Input) (json.RawMessage, error) { return f(ctx, in) }

// Registry maps action names (exec, http, local.dns_create, …) to actions.
type Registry map[string]Action

// Noop does nothing; the built-in noop pipeline uses it.
var Noop Action = noop{}

type noop struct{}

func (noop) Run(context.Context, Input) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }

// Permanent marks an error that retrying cannot fix (bad input, 4xx): the
// saga does not spend its retries on it.
type Permanent struct{ Err error }

func (p *Permanent) Error() string { return p.Err.Error() }
func (p *Permanent) Unwrap() error { return p.Err }
