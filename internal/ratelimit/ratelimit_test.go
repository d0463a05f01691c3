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
