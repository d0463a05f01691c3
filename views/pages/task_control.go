package pages

import (
	"time"

	"flightdeck/views/components"
)

// ControlView is the run control of a task (contract §10): its pause and,
// for a failed step under on_failure: ask, the decision it waits for.
// Each Can* says what the viewer may do now.
type ControlView struct {
	// CancelRequested: a cancel was accepted and is being carried out
	// (the step stops, completed steps are undone): nothing else is
	// offered, whatever state the task rests in meanwhile.
	CancelRequested bool
	CanPause        bool
	PauseRequested  bool // the task pauses when its current step ends
	Paused          bool
	CanResume       bool // a task a person paused
	Failed          *FailedStepView
}

// FailedStepView is the decision card of a failed step.
type FailedStepView struct {
	Index, Attempt int
	Name, Error    string
	ExpiresAt      *time.Time
	Log            []components.LogLine // the step's last lines
	CanRetry       bool
	CanSkip        bool
	SkipWhyNot     string // why the viewer may not skip
	CanRollback    bool
}
