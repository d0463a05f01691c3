package task

// CancelEffect is what a person's cancel does to a task in its state.
type CancelEffect int

const (
	// CancelRefused: nothing to cancel (Why says why): the task ended,
	// or it is undoing its steps already.
	CancelRefused CancelEffect = iota
	// CancelRequest: a running task is asked to stop: its worker stops the
	// step and compensates (the store flags it and tells the worker).
	CancelRequest
	// CancelNow: a waiting task that never ran a step ends cancelled at
	// once; its steps will never run and its approvals are decided by it.
	CancelNow
	// CancelUndo: a waiting task that ran steps (parked on a decision, a
	// pause, an answer, or handed back) goes to compensating without a
	// lease, so a worker claims it and undoes its steps.
	CancelUndo
)

// CancelOf is the cancel rule (contract §2): what cancelling a task in
// state does, ranSteps saying whether any of its steps ran. The store's
// write, the run page's button and the API's refusal all come from it. A
// terminal task is refused too; the store answers it apart (ErrTerminal).
func CancelOf(state State, ranSteps bool) (CancelEffect, string) {
	switch {
	case state.Terminal():
		return CancelRefused, "the task already ended"
	case state == StateCompensating || state == StateNeedsAttention:
		return CancelRefused, "the task is already undoing its steps"
	case state == StateRunning:
		return CancelRequest, ""
	case !ranSteps:
		return CancelNow, ""
	default:
		return CancelUndo, ""
	}
}
