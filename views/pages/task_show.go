package pages

import (
	"fmt"
	"time"

	"flightdeck/views/components"
	"flightdeck/workflow/task"
)

// TaskView is the task as the page shows it.
type TaskView struct {
	ID, Kind, Pipeline, State, Priority, CreatedBy, Error, Params, Prompt string
	RerunOf                                                               string // the task this one repeats, "" for none
	Resolution                                                            string // an admin's resolution of a stuck task, a note rather than an error
	CreatedAt                                                             time.Time
	StartedAt, FinishedAt                                                 *time.Time
	// CancelRequested: a cancel was accepted and the task is on its way to
	// cancelled (its badge says "cancelling").
	CancelRequested bool
	Progress        task.Progress
	Skipped         int // a completed task's skipped steps
	// Deploy says what the run deploys where; nil for agent tasks.
	Deploy *DeployView
}

// DeployView is a deploy's one-line story: target, version, and the
// version it replaces.
type DeployView struct {
	Target      []Param // the target params, in the pipeline's order
	VersionName string  // the pipeline's version parameter; "" when none
	Version     string
	// From is the version deployed to the target before this run (its task
	// FromTask); FromTask "" when nothing was.
	From, FromTask string
	// VersionURL and CompareURL link the version and the change from
	// From to their source (the pipeline's links; "" when it has none).
	VersionURL, CompareURL string
}

// Param is one named value.
type Param struct{ Name, Value string }

// ApprovalView is one approval card.
type ApprovalView struct {
	ID, Step, State, DecidedBy, Comment string
	RequestedAt, ExpiresAt              time.Time
	CanDecide                           bool
	WhyNot                              string // why the viewer cannot decide
	ToolCall                            bool   // an agent's tool call (its creator may confirm it)
	Roles                               []string
	// Detail is an agent tool call's exact call (tool, arguments, plan) as JSON.
	Detail string
	// Environment: an environment's reviewers (Required distinct people);
	// Decisions lists who decided so far.
	Environment bool
	Required    int
	Decisions   []string // "pat@acme.test approved: looks good"
	Changes     []ChangeRow
}

// EventView is one line of the raw event log.
type EventView struct {
	Seq                             int
	Time                            time.Time
	Type, Status, StepName, Message string
}

// EventTypes are the raw event log's filter choices (contract §4).
var EventTypes = []string{"task.state", "step.started", "step.log", "step.completed", "step.failed", "step.retrying",
	"step.compensating", "step.compensated", "approval.requested", "approval.decided", "tool.executed",
	"agent.thinking", "agent.tool_call", "agent.tool_result", "agent.question", "agent.error", "artifact.created",
	"task.completed", "task.failed", "task.cancelled", "task.paused", "task.resumed", "task.override"}

// ArtifactView is one kept output.
type ArtifactView struct {
	ID, Name, Summary, Excerpt string
	Bytes                      int64
}

// TaskShowProps are the inputs of TaskShow and its live fragments.
type TaskShowProps struct {
	Task      TaskView
	Stages    []components.StageView
	StepsSig  string                // names the steps' structure: the socket re-sends the list when it changes
	Undo      []components.StepView // the compensation lane, in the order undone
	UndoSig   string
	Failure   *components.StepView // the step whose failure ended the run, with its output
	Gantt     components.GanttView
	Approvals []ApprovalView
	// Decisions are every decision a waiting deploy needs from people, from
	// the start (saga.Decisions): reviewers, a wait, step approvals.
	Decisions []DecisionView
	// Notes say what an environment's rules do to the task: held by a
	// freeze, scheduled, overridden, promoted.
	Notes     []KV        // Key: a data-testid; Value: the text
	Events    []EventView // the raw event log, newest first (bounded)
	Artifacts []ArtifactView
	Agent     *AgentView   // agent tasks, and failed deploys when an LLM can explain them
	Control   *ControlView // pause, resume and a failed step's decision; nil when nothing applies
	// What the viewer may do here now: task.May, and the task's state.
	CanSetPriority bool
	CanCancel      bool
	CanRerun       bool
	CanResolve     bool
	Flash          string
	FlashError     bool
	CSRFToken      string
	// Seq is the task row's last event seq when it was read: everything
	// shown is as of that seq, and the socket re-renders when it moves.
	Seq int
	// SectionSigs are the hashes of the sections as shown ("id=hash,…"):
	// the socket sends a section only when it differs, so its first push
	// does not redraw (and empty) a form a person began to fill in.
	SectionSigs string
}

// Terminal reports whether the task ended.
func (t TaskView) Terminal() bool { return task.State(t.State).Terminal() }

func percent(p task.Progress) string { return fmt.Sprintf("width: %d%%", p.Percent) }

func stamp(t time.Time) string { return t.UTC().Format("15:04:05") }

func stampPtr(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// Deciders says who may decide an approval, as the inbox says it.
func Deciders(toolCall bool, roles []string, createdBy string) string {
	if toolCall {
		return createdBy + " (who asked) or any " + joinOr(roles)
	}
	return "any " + joinOr(roles) + ", except " + createdBy + " (who asked)"
}

func taskNoun(t TaskView) string {
	if t.Kind == "agent" {
		return "agent task"
	}
	return "deploy"
}

// deployChange says what a deploy changes: "shop staging: version 1.0.0 → 1.1.0".
func deployChange(d *DeployView) string {
	if d == nil || d.Version == "" {
		return ""
	}
	var where string
	for _, t := range d.Target {
		where += t.Value + " "
	}
	if d.FromTask == "" {
		return fmt.Sprintf("%s%s %s (first deploy of this target)", where, d.VersionName, d.Version)
	}
	return fmt.Sprintf("%s%s %s → %s", where, d.VersionName, d.From, d.Version)
}

// cancelDetail says what a cancel changes.
func cancelDetail(p TaskShowProps) string {
	what := "It stops now; the steps it completed are undone, last first."
	if p.Task.State == "running" {
		// A step cut short has not completed: its undo runs only if the
		// pipeline asks for it (contract: compensate_on_failure).
		what += " The step running now is not undone unless it sets compensate_on_failure."
	}
	if c := deployChange(p.Task.Deploy); c != "" && p.Task.Deploy.FromTask != "" {
		return fmt.Sprintf("%s will not happen: %s keeps %s %s. %s", c, targetText(p.Task.Deploy), p.Task.Deploy.VersionName, p.Task.Deploy.From, what)
	}
	return what
}

// approvalDetail says what a decision changes.
func approvalDetail(p TaskShowProps, a ApprovalView, approve bool) string {
	c := deployChange(p.Task.Deploy)
	switch {
	case approve && c != "":
		return "The deploy goes on and runs " + a.Step + ": " + c + "."
	case approve:
		return "The task goes on and runs " + a.Step + "."
	case c != "":
		return "The deploy is cancelled and its completed steps undone: " + c + " will not happen."
	}
	return "The task is cancelled and its completed steps undone."
}

func targetText(d *DeployView) string {
	var out string
	for i, t := range d.Target {
		if i > 0 {
			out += " "
		}
		out += t.Value
	}
	return out
}

// DecisionView is one decision a deploy needs, as the run page lists it.
type DecisionView struct {
	What, Who, State string
}
