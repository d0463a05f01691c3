package breaker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type testBundle struct {
	now time.Time
	b   *Breaker
}

func setup(t *testing.T, cfg Config) *testBundle {
	t.Helper()
	tb := &testBundle{now: time.Unix(1000, 0)}
	cfg.Now = func() time.Time { return tb.now }
	tb.b = New(cfg)
	return tb
}

// fail makes n calls that fail.
func (tb *testBundle) fail(t *testing.T, n int) {
	t.Helper()
	for range n {
		c, err := tb.b.Allow()
		require.NoError(t, err)
		c.Done(false)
	}
}

func TestBreaker(t *testing.T) {
	t.Parallel()

	t.Run("OpensAfterConsecutiveFailuresOnly", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, Config{})
		tb.fail(t, 4)
		c, err := tb.b.Allow()
		require.NoError(t, err)
		c.Done(true) // a success in between starts the count again
		tb.fail(t, 4)
		_, err = tb.b.Allow()
		require.NoError(t, err, "4 in a row do not open it")
		tb.fail(t, 1)
		_, err = tb.b.Allow()
		var open *OpenError
		require.ErrorAs(t, err, &open)
		require.ErrorIs(t, err, ErrOpen)
		require.Equal(t, tb.now.Add(OpenForDefault), open.Until)
	})

	t.Run("HalfOpensWithOneProbeAndClosesAfterTwoSuccesses", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, Config{})
		tb.fail(t, 5)
		tb.now = tb.now.Add(OpenForDefault - time.Millisecond)
		_, err := tb.b.Allow()
		require.ErrorIs(t, err, ErrOpen, "still open")
		tb.now = tb.now.Add(time.Millisecond)
		probe, err := tb.b.Allow()
		require.NoError(t, err, "half-open")
		_, err = tb.b.Allow()
		require.ErrorIs(t, err, ErrOpen, "one probe at a time")
		probe.Done(true)
		probe, err = tb.b.Allow()
		require.NoError(t, err, "the next probe")
		_, err = tb.b.Allow()
		require.ErrorIs(t, err, ErrOpen, "still one at a time after one success")
		probe.Done(true)
		for range 3 {
			c, err := tb.b.Allow()
			require.NoError(t, err, "closed: calls go through side by side")
			defer c.Done(true)
		}
	})

	t.Run("AFailedProbeOpensItAgain", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, Config{Failures: 1, OpenFor: time.Minute, Successes: 1})
		tb.fail(t, 1)
		tb.now = tb.now.Add(time.Minute)
		probe, err := tb.b.Allow()
		require.NoError(t, err)
		probe.Done(false)
		_, err = tb.b.Allow()
		var open *OpenError
		require.ErrorAs(t, err, &open)
		require.Equal(t, tb.now.Add(time.Minute), open.Until, "a whole OpenFor again")
	})

	t.Run("AnAbandonedProbeLetsTheNextOneGo", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, Config{Failures: 1, Successes: 1})
		tb.fail(t, 1)
		tb.now = tb.now.Add(OpenForDefault)
		probe, err := tb.b.Allow()
		require.NoError(t, err)
		probe.Abandon()
		probe, err = tb.b.Allow()
		require.NoError(t, err, "the abandoned probe decided nothing")
		probe.Done(true)
		c, err := tb.b.Allow()
		require.NoError(t, err)
		c.Abandon() // a closed breaker's call: nothing to release
	})

	t.Run("LateOutcomesOfOlderCallsAreIgnored", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, Config{Failures: 2, Successes: 1})
		slow, err := tb.b.Allow()
		require.NoError(t, err)
		tb.fail(t, 2)
		tb.now = tb.now.Add(OpenForDefault)
		probe, err := tb.b.Allow()
		require.NoError(t, err)
		slow.Done(false) // from before the opening: neither re-opens nor frees the probe's turn
		_, err = tb.b.Allow()
		require.ErrorIs(t, err, ErrOpen)
		probe.Done(true)
		slow.Done(false)
		c, err := tb.b.Allow()
		require.NoError(t, err, "closed, and the late failure did not count")
		c.Done(false)
		_, err = tb.b.Allow()
		require.NoError(t, err, "one failure of two")
	})

	t.Run("ZeroAndNegativeConfigTakeTheDefaults", func(t *testing.T) {
		t.Parallel()
		b := New(Config{Failures: -1, OpenFor: -time.Second})
		require.Equal(t, FailuresDefault, b.cfg.Failures)
		require.Equal(t, OpenForDefault, b.cfg.OpenFor)
		require.Equal(t, SuccessesDefault, b.cfg.Successes)
	})
}

// TestRetryWait: the one rule the saga's step retries and the LLM client's
// retries wait by.
func TestRetryWait(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	refused := func(until time.Duration) error {
		return fmt.Errorf("call: %w", &OpenError{Until: now.Add(until)})
	}
	require.Equal(t, 2*time.Second, RetryWait(2*time.Second, nil, now), "no failure: the backoff")
	require.Equal(t, 2*time.Second, RetryWait(2*time.Second, errors.New("boom"), now), "another failure: the backoff")
	require.Equal(t, time.Minute, RetryWait(2*time.Second, refused(time.Minute), now), "open: until it half-opens")
	require.Equal(t, 2*time.Second, RetryWait(2*time.Second, refused(time.Second), now), "half-opens sooner: the backoff")
	require.Equal(t, 2*time.Second, RetryWait(2*time.Second, refused(-time.Second), now), "a probe is out: the backoff")
}
