package task

import "time"

// PauseEffect is what a person's pause does to a task in its state.
type PauseEffect int

const (
	// PauseRefused: the task cannot be paused now (Why says why).
	PauseRefused PauseEffect = iota
	// PauseNow: the task has not started (pending, scheduled): it parks
	// paused at once.
	PauseNow
	// PauseRequest: a running deploy is asked to pause when its current
	// step ends.
	PauseRequest
)

// PauseOf is the pause rule (contract §10), for the store's write and the
// run page's control alike: what pausing a task of kind in state does
// (requested: a pause was already asked for), and, when refused, why. A
// terminal task is refused too; the store answers it apart (ErrTerminal).
func PauseOf(state State, kind Kind, requested bool) (PauseEffect, string) {
	switch {
	case state.Terminal():
		return PauseRefused, "the task already ended"
	case state == StatePending || state == StateScheduled:
		return PauseNow, ""
	case state == StateRunning && kind != KindDeploy:
		// an agent's loop has no steps to pause between
		return PauseRefused, "a running agent task cannot be paused; cancel it, or send it a message"
	case state == StateRunning && !requested:
		return PauseRequest, ""
	case state == StateRunning || state == StatePaused:
		return PauseRefused, "the task is already paused or pausing"
	default:
		return PauseRefused, "a " + string(state) + " task cannot be paused"
	}
}

// KeepsPauseRequest reports whether a pause request outlives a change to
// state: it lasts while the task runs or waits to run again (pending) and
// ends with any other state (contract §10).
func (s State) KeepsPauseRequest() bool { return s == StateRunning || s == StatePending }

// UTCDay is the UTC day t falls in (its midnight): the day the dashboard's
// rollups count a task in, and the days its charts read.
func UTCDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}
