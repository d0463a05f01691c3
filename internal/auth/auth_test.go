package auth

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPassword(t *testing.T) {
	t.Parallel()
	_, err := HashPassword("short")
	require.Error(t, err)
	h, err := HashPassword("correct horse")
	require.NoError(t, err)
	require.True(t, CheckPassword(h, "correct horse"))
	require.False(t, CheckPassword(h, "wrong horse"))
	require.False(t, CheckPassword("", ""))
}

func TestSecret(t *testing.T) {
	t.Parallel()
	s, h := NewSecret(TokenPrefix)
	require.Equal(t, HashSecret(s), h)
	s2, _ := NewSecret(TokenPrefix)
	require.NotEqual(t, s, s2)
	require.Greater(t, len(s), 40)
}

func TestValidEmail(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a@b.c", "admin@demo.local"} {
		require.True(t, ValidEmail(ok), ok)
	}
	for _, bad := range []string{"", "a", "@b.c", "a@", "a@b", "a b@c.d", "a@@b.c"} {
		require.False(t, ValidEmail(bad), bad)
	}
}
