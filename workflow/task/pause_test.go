package task

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPauseOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		state     State
		kind      Kind
		requested bool
		want      PauseEffect
	}{
		{StatePending, KindDeploy, false, PauseNow},
		{StateScheduled, KindAgent, false, PauseNow},
		{StateRunning, KindDeploy, false, PauseRequest},
		{StateRunning, KindDeploy, true, PauseRefused},
		{StateRunning, KindAgent, false, PauseRefused},
		{StatePaused, KindDeploy, false, PauseRefused},
		{StateAwaitingApproval, KindDeploy, false, PauseRefused},
		{StateCompensating, KindDeploy, false, PauseRefused},
		{StateCompleted, KindDeploy, false, PauseRefused},
	} {
		got, why := PauseOf(tc.state, tc.kind, tc.requested)
		require.Equal(t, tc.want, got, "%+v", tc)
		require.Equal(t, got == PauseRefused, why != "", "a refusal says why: %+v", tc)
	}
}

func TestUTCDay(t *testing.T) {
	t.Parallel()
	east := time.FixedZone("UTC+5", 5*3600)
	require.Equal(t, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), UTCDay(time.Date(2026, 3, 2, 3, 0, 0, 0, east)),
		"03:00 at UTC+5 is the day before in UTC")
	require.Equal(t, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), UTCDay(time.Date(2026, 3, 2, 23, 59, 59, 0, time.UTC)))
}

func TestKeepsPauseRequest(t *testing.T) {
	t.Parallel()
	for _, s := range States {
		require.Equal(t, s == StateRunning || s == StatePending, s.KeepsPauseRequest(), s)
	}
}
