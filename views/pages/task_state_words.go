package pages

// headerLabel is the header's word for where the task stands: a paused
// task says it is paused (its clock stops: nothing runs), on a failed
// step's decision or a person's pause; others say what their clock
// measures (clockLabel).
func headerLabel(p TaskShowProps) string {
	if p.Task.State == "paused" && p.Task.FinishedAt == nil {
		if p.Control != nil && p.Control.Failed != nil {
			return "paused: step " + p.Control.Failed.Name + " failed, waiting for a decision"
		}
		return "paused, waiting for someone to resume it"
	}
	return clockLabel(p.Task)
}

// clockLabel is what the header's clock measures, in the task's state's
// words: a stuck task is not "running", a parked one waits.
func clockLabel(t TaskView) string {
	if t.FinishedAt != nil {
		return "took"
	}
	switch t.State {
	case "needs_attention":
		return "stopped: an admin must retry the undo or mark it resolved"
	case "awaiting_approval":
		return "waiting for an approval, open for"
	case "awaiting_input":
		return "waiting for an answer, open for"
	case "pending", "scheduled":
		return "queued again, open for"
	case "compensating":
		return "undoing steps, open for"
	}
	return "running for"
}
