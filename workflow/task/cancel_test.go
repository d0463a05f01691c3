package task

import "testing"

// TestCancelOf: the cancel rule, state by state.
func TestCancelOf(t *testing.T) {
	for _, c := range []struct {
		state    State
		ranSteps bool
		want     CancelEffect
	}{
		{StatePending, false, CancelNow},
		{StateScheduled, false, CancelNow},
		{StateAwaitingApproval, false, CancelNow},
		{StatePaused, false, CancelNow},
		{StatePaused, true, CancelUndo},
		{StatePending, true, CancelUndo}, // handed back after steps ran
		{StateAwaitingInput, true, CancelUndo},
		{StateRunning, true, CancelRequest},
		{StateRunning, false, CancelRequest},
		{StateCompensating, true, CancelRefused},
		{StateNeedsAttention, true, CancelRefused},
		{StateCompleted, true, CancelRefused},
		{StateCancelled, false, CancelRefused},
	} {
		got, why := CancelOf(c.state, c.ranSteps)
		if got != c.want {
			t.Errorf("CancelOf(%s, %v) = %v, want %v", c.state, c.ranSteps, got, c.want)
		}
		if (got == CancelRefused) != (why != "") {
			t.Errorf("CancelOf(%s, %v): a refusal and only a refusal says why, got %q", c.state, c.ranSteps, why)
		}
	}
}
