package ratelimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLimiter(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	l := New(10)
	l.Now = func() time.Time { return now }
	for i := 0; i < 20; i++ {
		ok, _ := l.Allow("a")
		require.True(t, ok, "burst %d", i)
	}
	ok, wait := l.Allow("a")
	require.False(t, ok)
	require.Greater(t, wait, time.Duration(0))
	ok, _ = l.Allow("b")
	require.True(t, ok, "keys are independent")
	now = now.Add(200 * time.Millisecond)
	ok, _ = l.Allow("a")
	require.True(t, ok, "refilled")
}

func TestPerWindowPeekAndSweep(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	l := NewPerWindow(3, 3*time.Minute) // 3 at once, then one a minute
	l.Now = func() time.Time { return now }
	for range 3 {
		ok, _ := l.Peek("a")
		require.True(t, ok)
		ok, _ = l.Peek("a")
		require.True(t, ok, "peeking takes nothing")
		ok, _ = l.Allow("a")
		require.True(t, ok)
	}
	ok, wait := l.Peek("a")
	require.False(t, ok)
	require.InDelta(t, time.Minute.Seconds(), wait.Seconds(), 0.01)
	ok, _ = l.Peek("never-used")
	require.True(t, ok)

	// Idle for two minutes: the sweep must not forget a bucket that has
	// not refilled (it would come back full).
	now = now.Add(2 * time.Minute)
	ok, _ = l.Allow("b") // triggers the sweep
	require.True(t, ok)
	for range 2 {
		ok, _ = l.Allow("a")
		require.True(t, ok, "two refilled in two minutes")
	}
	ok, _ = l.Allow("a")
	require.False(t, ok, "not three")
}
