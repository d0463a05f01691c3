package queue

import (
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

func TestRescueDecision(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		in     store.Stale
		state  task.State
		events []task.EventType
		err    string
	}{
		{"AttemptsLeft", store.Stale{ID: "a", Token: "t", State: task.StateRunning, Attempt: 1, MaxAttempts: 5},
			task.StatePending, []task.EventType{task.EventTaskState}, ""},
		{"LastAttemptUsed", store.Stale{ID: "a", Token: "t", State: task.StateRunning, Attempt: 5, MaxAttempts: 5},
			task.StateFailed, []task.EventType{task.EventTaskState, task.EventTaskFailed}, "worker lost 5 time(s); max_attempts reached"},
		{"CompensatingGoesOnWhateverTheCount", store.Stale{ID: "a", Token: "t", State: task.StateCompensating, Attempt: 9, MaxAttempts: 5},
			task.StateCompensating, []task.EventType{task.EventTaskState}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Rescue(tc.in)
			require.Equal(t, tc.state, w.State)
			require.Equal(t, "t", w.Token, "fenced by the lost lease, so a renewal that won the row keeps it")
			require.True(t, w.Release)
			require.True(t, w.BumpAttempt, "the lost run counts as an attempt")
			var types []task.EventType
			for _, e := range w.Events {
				types = append(types, e.Type)
			}
			require.Equal(t, tc.events, types)
			if tc.err == "" {
				require.Nil(t, w.Error)
			} else {
				require.Equal(t, tc.err, *w.Error)
			}
		})
	}
}

func TestDeadlinePassedDecision(t *testing.T) {
	t.Parallel()
	w := DeadlinePassed(store.Stale{ID: "a", State: task.StatePending})
	require.Equal(t, task.StateFailed, w.State)
	require.Empty(t, w.Token, "the task holds no lease")
	require.Equal(t, task.EventTaskFailed, w.Events[len(w.Events)-1].Type, "the last event of a task is its terminal one")
}
