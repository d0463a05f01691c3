package task

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCanTransition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, to State
		want     bool
	}{
		{StatePending, StateRunning, true},
		{StatePending, StateCancelled, true},
		{StatePending, StateCompleted, false},
		{StateRunning, StateCompleted, true},
		{StateRunning, StateAwaitingApproval, true},
		{StateAwaitingApproval, StatePending, true},
		{StateAwaitingApproval, StateRunning, false},
		{StateCompensating, StateNeedsAttention, true},
		{StateNeedsAttention, StateCompensating, true},
		{StateNeedsAttention, StateCompleted, false},
		{StateCompleted, StateRunning, false},
		{StateCancelled, StatePending, false},
		{State("bogus"), StatePending, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, CanTransition(tt.from, tt.to), "%s -> %s", tt.from, tt.to)
	}
}

func TestTerminalStatesHaveNoWayOut(t *testing.T) {
	t.Parallel()
	for _, s := range States {
		require.True(t, s.Valid())
		if s.Terminal() {
			for _, to := range States {
				require.False(t, CanTransition(s, to), "%s -> %s", s, to)
			}
		}
	}
}

func TestPriority(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"hotfix", "high", "normal", "low"} {
		p, err := ParsePriority(name)
		require.NoError(t, err)
		require.Equal(t, name, p.String())
		b, _ := json.Marshal(p)
		require.Equal(t, `"`+name+`"`, string(b))
	}
	p, err := ParsePriority("")
	require.NoError(t, err)
	require.Equal(t, PriorityNormal, p)
	_, err = ParsePriority("urgent")
	require.Error(t, err)
	require.Less(t, PriorityHotfix, PriorityLow, "hotfix sorts first")
}

func FuzzTransitions(f *testing.F) {
	f.Add("pending", "running")
	f.Add("completed", "failed")
	f.Fuzz(func(t *testing.T, from, to string) {
		ok := CanTransition(State(from), State(to))
		if ok && (State(from).Terminal() || !State(to).Valid()) {
			t.Fatalf("illegal transition allowed: %s -> %s", from, to)
		}
	})
}
