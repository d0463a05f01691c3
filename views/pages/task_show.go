package pages

import (
	"fmt"
	"time"

	"flightdeck/workflow/task"
)

// TaskView is the task as the page shows it.
type TaskView struct {
	ID, Kind, Pipeline, State, Priority, CreatedBy, Error, Params, Prompt string
	CreatedAt                                                             time.Time
	StartedAt, FinishedAt                                                 *time.Time
	Progress                                                              task.Progress
}

// StepView is one step row.
type StepView struct {
	Index          int
	Name, State    string
	Error          string
	Attempt        int
	Duration       string
	CompensatedAgo string
}

// ApprovalView is one approval card.
type ApprovalView struct {
	ID, Step, State, DecidedBy, Comment string
	RequestedAt, ExpiresAt              time.Time
	CanDecide                           bool
	WhyNot                              string // why the viewer cannot decide
	// Detail is an agent tool call's exact call (tool, arguments, plan) as JSON.
	Detail string
}

// EventView is one line of the event log.
type EventView struct {
	Seq                             int
	Time                            time.Time
	Type, Status, StepName, Message string
}

// ArtifactView is one kept output.
type ArtifactView struct {
	ID, Name, Summary, Excerpt string
	Bytes                      int64
}

// TaskShowProps are the inputs of TaskShow and its live fragments.
type TaskShowProps struct {
	Task          TaskView
	Steps         []StepView
	Compensations []StepView // the undo lane, in the order undone
	Approvals     []ApprovalView
	Events        []EventView
	Artifacts     []ArtifactView
	Agent         *AgentView // agent tasks, and failed deploys when an LLM can explain them
	LogTail       []string
	LogStep       string
	CanCancel     bool
	CanAdmin      bool
	Flash         string
	FlashError    bool
	CSRFToken     string
	// Seq is the task row's last event seq when it was read: everything
	// shown is as of that seq, and the socket re-renders when it moves.
	Seq int
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
