package task

import (
	"encoding/json"
	"time"
)

// EventType is the fine-grained kind of an event.
type EventType string

const (
	EventTaskState         EventType = "task.state"
	EventStepStarted       EventType = "step.started"
	EventStepLog           EventType = "step.log"
	EventStepCompleted     EventType = "step.completed"
	EventStepFailed        EventType = "step.failed"
	EventStepRetrying      EventType = "step.retrying"
	EventStepCompensating  EventType = "step.compensating"
	EventStepCompensated   EventType = "step.compensated"
	EventApprovalRequested EventType = "approval.requested"
	EventApprovalDecided   EventType = "approval.decided"
	EventToolExecuted      EventType = "tool.executed"
	EventAgentThinking     EventType = "agent.thinking"
	EventAgentToolCall     EventType = "agent.tool_call"
	EventAgentToolResult   EventType = "agent.tool_result"
	EventAgentQuestion     EventType = "agent.question"
	EventAgentError        EventType = "agent.error"
	EventArtifactCreated   EventType = "artifact.created"
	EventTaskCompleted     EventType = "task.completed"
	EventTaskFailed        EventType = "task.failed"
	EventTaskCancelled     EventType = "task.cancelled"
	// EventTaskPaused: the task parked paused (a person's pause, or a failed
	// step waiting for a decision); EventTaskResumed: a person resumed it,
	// data.action saying how (continue, retry, skip, rollback).
	EventTaskPaused  EventType = "task.paused"
	EventTaskResumed EventType = "task.resumed"
	// EventTaskOverride: an admin overrode an environment's rules (contract §9).
	EventTaskOverride EventType = "task.override"
)

// Terminal reports whether the event ends its task's stream.
func (t EventType) Terminal() bool {
	return t == EventTaskCompleted || t == EventTaskFailed || t == EventTaskCancelled
}

// Status is the coarse progress vocabulary clients render.
type Status string

const (
	StatusThinking     Status = "thinking"
	StatusToolCall     Status = "tool_call"
	StatusToolResult   Status = "tool_result"
	StatusLog          Status = "log"
	StatusApproval     Status = "approval"
	StatusCompensating Status = "compensating"
	StatusCompleted    Status = "completed"
	StatusError        Status = "error"
	StatusCancelled    Status = "cancelled"
)

// Event is one visible change of a task, numbered by a gap-free per-task seq.
type Event struct {
	TaskID    string          `json:"task_id"`
	Seq       int             `json:"seq"`
	Type      EventType       `json:"type"`
	Status    Status          `json:"status"`
	Step      int             `json:"step"`
	TotalStep int             `json:"total_step"`
	StepName  string          `json:"step_name,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Message   string          `json:"message"`
	Data      json.RawMessage `json:"data"`
	Time      time.Time       `json:"time"`
}

// TerminalEvent returns the event type and status that end a task in state s.
func TerminalEvent(s State) (EventType, Status) {
	switch s {
	case StateCompleted:
		return EventTaskCompleted, StatusCompleted
	case StateCancelled:
		return EventTaskCancelled, StatusCancelled
	default:
		return EventTaskFailed, StatusError
	}
}
