// Package task is flightdeck's vocabulary: tasks, steps, events, their
// states and the transitions allowed between them. It imports the standard
// library only, so every other package can speak it.
package task

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Kind is what a task runs.
type Kind string

const (
	KindDeploy Kind = "deploy" // a pipeline run as a saga
	KindAgent  Kind = "agent"  // an LLM agent loop with tools
)

// State is a task's state.
type State string

const (
	StatePending          State = "pending"
	StateScheduled        State = "scheduled" // waiting out a retry backoff; promoted to pending by the scheduler
	StateRunning          State = "running"
	StateAwaitingApproval State = "awaiting_approval"
	StateAwaitingInput    State = "awaiting_input"
	StatePaused           State = "paused" // a person paused it, or a failed step waits for a decision (on_failure: ask)
	StateCompensating     State = "compensating"
	StateNeedsAttention   State = "needs_attention"
	StateCompleted        State = "completed"
	StateFailed           State = "failed"
	StateCancelled        State = "cancelled"
)

// MaxAttemptsDefault is how often a task is started when its submit does
// not say (contract §2: a start its worker did not live through counts).
const MaxAttemptsDefault = 5

// States lists every state, in lifecycle order.
var States = []State{StatePending, StateScheduled, StateRunning, StateAwaitingApproval, StateAwaitingInput,
	StatePaused, StateCompensating, StateNeedsAttention, StateCompleted, StateFailed, StateCancelled}

// TerminalStates are the states no transition leaves: a task in one has
// ended. The store writes them into its statements from here.
var TerminalStates = []State{StateCompleted, StateFailed, StateCancelled}

// ClaimableStates are the states a worker claims a task in (when it holds no
// lease): pending tasks start or resume, compensating ones undo steps.
var ClaimableStates = []State{StatePending, StateCompensating}

// Terminal reports whether no further transition can happen.
func (s State) Terminal() bool { return slices.Contains(TerminalStates, s) }

// Claimable reports whether a worker may claim a task in s (when it holds
// no lease).
func (s State) Claimable() bool { return slices.Contains(ClaimableStates, s) }

// WaitsForPerson reports whether a task in s waits for a person's decision
// or answer (or, paused, for a person to resume it): that time is not run
// time (the dashboard's rollups).
func (s State) WaitsForPerson() bool {
	return s == StateAwaitingApproval || s == StateAwaitingInput || s == StatePaused
}

// RunTime is an ended task's run time: from its start to its end, less the
// time it waited for people (the states WaitsForPerson names, which the
// store sums as waited, by the database's clock as every task time is);
// 0 for a task that never started.
func RunTime(started *time.Time, finished time.Time, waited time.Duration) time.Duration {
	if started == nil {
		return 0
	}
	return max(0, finished.Sub(*started)-waited)
}

// Valid reports whether s is a known state.
func (s State) Valid() bool {
	_, ok := transitions[s]
	return ok
}

// transitions lists, for each state, the states a task may move to.
var transitions = map[State][]State{
	StatePending:   {StateRunning, StateCancelled, StateCompensating, StateFailed, StatePaused},
	StateScheduled: {StatePending, StateCancelled, StateCompensating, StateFailed, StatePaused},
	StateRunning:   {StatePending, StateScheduled, StateAwaitingApproval, StateAwaitingInput, StatePaused, StateCompensating, StateCompleted, StateFailed, StateCancelled},
	// scheduled: an environment's reviewers approved and its wait timer
	// or the submit's run_at follows
	StateAwaitingApproval: {StatePending, StateScheduled, StateCompensating, StateCancelled, StateFailed},
	StateAwaitingInput:    {StatePending, StateCompensating, StateCancelled, StateFailed},
	StatePaused:           {StatePending, StateScheduled, StateCompensating, StateCancelled}, // resume, roll back or cancel
	StateCompensating:     {StatePending, StateFailed, StateCancelled, StateNeedsAttention, StateCompensating},
	StateNeedsAttention:   {StateCompensating, StateFailed},
	StateCompleted:        nil,
	StateFailed:           nil,
	StateCancelled:        nil,
}

// Transitions lists every allowed change of state as (from, to), sorted:
// the database's copy of the rule is made from it (store.Migrate).
func Transitions() [][2]State {
	var out [][2]State
	for _, from := range States {
		for _, to := range transitions[from] {
			out = append(out, [2]State{from, to})
		}
	}
	slices.SortFunc(out, func(a, b [2]State) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	return out
}

// CanTransition reports whether a task in from may move to to.
func CanTransition(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Priority orders claims: a lower number is claimed first.
type Priority int16

const (
	PriorityHotfix Priority = 1
	PriorityHigh   Priority = 2
	PriorityNormal Priority = 3
	PriorityLow    Priority = 4
)

var priorityNames = map[Priority]string{PriorityHotfix: "hotfix", PriorityHigh: "high", PriorityNormal: "normal", PriorityLow: "low"}

func (p Priority) String() string {
	if n, ok := priorityNames[p]; ok {
		return n
	}
	return fmt.Sprintf("priority(%d)", int16(p))
}

// ParsePriority reads a priority name; "" is normal.
func ParsePriority(s string) (Priority, error) {
	if s == "" {
		return PriorityNormal, nil
	}
	for p, n := range priorityNames {
		if n == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown priority %q (want hotfix, high, normal or low)", s)
}

// MarshalJSON writes the priority's name.
func (p Priority) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

// Progress is how far a task is.
type Progress struct {
	Step      int `json:"step"`
	TotalStep int `json:"total_step"`
	Percent   int `json:"percent"`
}

// Task is one unit of work of a team.
type Task struct {
	ID              string          `json:"id"`
	TeamID          string          `json:"-"`
	Team            string          `json:"team"`
	Kind            Kind            `json:"kind"`
	Pipeline        string          `json:"pipeline,omitempty"`
	Params          json.RawMessage `json:"params"`
	Prompt          string          `json:"prompt,omitempty"`
	Priority        Priority        `json:"priority"`
	State           State           `json:"state"`
	Attempt         int             `json:"attempt"`
	MaxAttempts     int             `json:"max_attempts"`
	CreatedByID     string          `json:"-"`
	CreatedBy       string          `json:"created_by"`
	CreatedAt       time.Time       `json:"created_at"`
	StartedAt       *time.Time      `json:"started_at"`
	FinishedAt      *time.Time      `json:"finished_at"`
	DeadlineAt      *time.Time      `json:"deadline_at"`
	CancelRequested bool            `json:"cancel_requested"`
	Error           *string         `json:"error"`
	Result          json.RawMessage `json:"result"`
	Progress        Progress        `json:"progress"`
	LastSeq         int             `json:"last_seq"`
	// BlockedBy is the task holding this pending task's concurrency key
	// (the wait holds no worker); nil when nothing blocks it.
	BlockedBy *string `json:"blocked_by"`
	// RerunOf is the task this one repeats (a re-run, redeploy or
	// rollback); nil otherwise.
	RerunOf *string `json:"rerun_of"`
	// Environment is a deploy's environment ("" for none, contract §9).
	Environment string `json:"environment,omitempty"`
	// RunAt is when a scheduled task becomes pending (its run_at, an
	// environment's wait timer, a retry's backoff or the end of a freeze).
	RunAt *time.Time `json:"run_at"`
	// PromotedFrom is the deploy a promotion repeats; nil otherwise.
	PromotedFrom *string `json:"promoted_from"`
	// Override is an admin's break-glass override ({"by","reason","at"}); null for none.
	Override json.RawMessage `json:"override"`
	// Held says why a waiting task does not start now (a freeze); nil when nothing holds it.
	Held       *Held  `json:"held"`
	LeaseToken string `json:"-"` // set on claimed tasks; every worker write carries it
	Steps      []Step `json:"steps,omitempty"`
	// PauseRequested: a person asked the running task to pause; it parks
	// paused once the step (or group) it is in ends.
	PauseRequested bool `json:"pause_requested"`
	// FailedStep is the step a paused task waits on a decision about
	// (guided failure), nil for a task a person paused; undecided by
	// DecisionExpiresAt, the task rolls back.
	FailedStep        *FailedStep `json:"failed_step"`
	DecisionExpiresAt *time.Time  `json:"decision_expires_at"`
}

// Held is why a waiting task does not start: a freeze, until its end.
type Held struct {
	Reason string    `json:"reason"` // frozen
	Until  time.Time `json:"until"`
	// Message is the freeze's reason in words.
	Message string `json:"message,omitempty"`
}

// FailedStep is the step whose failure a paused task waits on a decision
// about.
type FailedStep struct {
	Index   int    `json:"index"`
	Name    string `json:"name"`
	Error   string `json:"error"`
	Attempt int    `json:"attempt"`
}

// Step is one step of a deploy task.
type Step struct {
	Index      int        `json:"index"`
	Name       string     `json:"name"`
	State      string     `json:"state"`
	Attempt    int        `json:"attempt"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Error      *string    `json:"error"`
	Artifacts  []string   `json:"artifacts"`
}
