package backoff

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// within asserts d is want jittered: in [want·0.8, want·1.2].
func within(t *testing.T, want, d time.Duration, msg string) {
	t.Helper()
	require.GreaterOrEqual(t, d, time.Duration(float64(want)*(1-Spread)), msg)
	require.LessOrEqual(t, d, time.Duration(float64(want)*(1+Spread)), msg)
}

func TestExponential(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		base, ceiling time.Duration
		n             int
		want          time.Duration // before the jitter
	}{
		{"FirstRetryIsTheBase", time.Second, time.Minute, 1, time.Second},
		{"Doubles", time.Second, time.Minute, 2, 2 * time.Second},
		{"DoublesAgain", time.Second, time.Minute, 4, 8 * time.Second},
		{"AttemptZeroIsTheFirst", time.Second, time.Minute, 0, time.Second},
		{"NegativeAttemptIsTheFirst", time.Second, time.Minute, -3, time.Second},
		{"NoCeiling", time.Millisecond, 0, 21, 1 << 20 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for range 200 {
				within(t, tt.want, Exponential(tt.base, tt.ceiling, tt.n), tt.name)
			}
		})
	}

	t.Run("TheCeilingHoldsAfterTheJitter", func(t *testing.T) {
		t.Parallel()
		for n := 6; n < 10; n++ { // 32s, 64s… against a 30s ceiling
			for range 200 {
				d := Exponential(time.Second, 30*time.Second, n)
				require.LessOrEqual(t, d, 30*time.Second)
				require.GreaterOrEqual(t, d, 24*time.Second, "still spread below the ceiling")
			}
		}
	})

	t.Run("LargeAttemptsDoNotOverflow", func(t *testing.T) {
		t.Parallel()
		for _, n := range []int{40, 63, 64, 65, 1000, math.MaxInt} {
			d := Exponential(time.Second, time.Hour, n)
			require.Positive(t, d, "attempt %d", n)
			require.LessOrEqual(t, d, time.Hour, "attempt %d", n)
			d = Exponential(time.Second, 0, n)
			require.Positive(t, d, "attempt %d without a ceiling", n)
			require.GreaterOrEqual(t, d, time.Duration(float64(math.MaxInt64)*(1-Spread)), "attempt %d", n)
		}
	})

	t.Run("NoBaseNoWait", func(t *testing.T) {
		t.Parallel()
		require.Zero(t, Exponential(0, time.Minute, 3))
		require.Zero(t, Exponential(-time.Second, time.Minute, 3))
	})

	t.Run("JitterSpreads", func(t *testing.T) {
		t.Parallel()
		seen := map[time.Duration]bool{}
		for range 200 {
			seen[Exponential(time.Second, time.Minute, 1)] = true
		}
		require.Greater(t, len(seen), 100, "retries that failed together are spread out")
	})
}

func TestJitter(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{time.Nanosecond * 10, time.Second, 6 * time.Hour} {
		for range 200 {
			within(t, d, Jitter(d), d.String())
		}
	}
	require.Zero(t, Jitter(0))
	require.Zero(t, Jitter(-time.Second))
	require.Positive(t, Jitter(math.MaxInt64), "the largest duration does not overflow")
}
