package pages

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
