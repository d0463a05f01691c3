package saga

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/action"
)

func TestRetryWait(t *testing.T) {
	t.Parallel()
	r := NewRunner(Config{RetryBase: time.Second})
	boom := errors.New("boom")

	t.Run("DoublesWithJitter", func(t *testing.T) {
		t.Parallel()
		for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second} {
			d := r.retryWait(n, boom)
			require.GreaterOrEqual(t, d, want*8/10, "retry %d", n)
			require.LessOrEqual(t, d, want*12/10, "retry %d", n)
		}
	})

	t.Run("CappedAt1024TimesTheBase", func(t *testing.T) {
		t.Parallel()
		require.LessOrEqual(t, r.retryWait(20, boom), 1024*time.Second)
		require.LessOrEqual(t, NewRunner(Config{RetryBase: time.Second, RetryMax: time.Minute}).retryWait(20, boom), time.Minute)
	})

	t.Run("AnOpenCircuitIsWaitedOut", func(t *testing.T) {
		t.Parallel()
		open := &action.CircuitOpenError{Host: "h", Until: time.Now().Add(time.Hour)}
		d := r.retryWait(1, fmt.Errorf("step: %w", open))
		require.Greater(t, d, 59*time.Minute, "the retry waits for the half-open breaker")
		require.LessOrEqual(t, d, time.Hour)
	})

	t.Run("AProbeAlreadyOutKeepsTheBackoff", func(t *testing.T) {
		t.Parallel()
		open := &action.CircuitOpenError{Host: "h", Until: time.Now().Add(-time.Second)}
		d := r.retryWait(1, open)
		require.LessOrEqual(t, d, 1200*time.Millisecond)
		require.GreaterOrEqual(t, d, 800*time.Millisecond)
	})
}
