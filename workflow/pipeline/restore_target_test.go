package pipeline

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRestoreTarget: a key names the target when the task has one; without,
// the params but every version-like one do (a tag or an image_tag is the
// version as much as "version" is, so two deploys of tags 1 and 2 to the
// same app are one target).
func TestRestoreTarget(t *testing.T) {
	require.Equal(t, `web {"app":"shop"}`, RestoreTarget("web", `{"app":"shop"}`, "ck", map[string]any{"app": "x"}))
	require.Equal(t, "web ck", RestoreTarget("web", "", "ck", nil))
	a := RestoreTarget("web", "", "", map[string]any{"app": "shop", "tag": "1", "image_tag": "a", "sha": "f00", "api_version": "2"})
	b := RestoreTarget("web", "", "", map[string]any{"app": "shop", "tag": "2", "image_tag": "b", "sha": "ba4", "api_version": "3"})
	require.Equal(t, a, b)
	require.Equal(t, `web {"app":"shop"}`, a)
	require.NotEqual(t, a, RestoreTarget("web", "", "", map[string]any{"app": "cart", "tag": "1"}))
	require.Equal(t, "web {}", RestoreTarget("web", "", "", nil))
	for name := range map[string]bool{"version": true, "tag": true, "image_tag": true, "sha": true, "db_version": true} {
		require.True(t, VersionLike(name), name)
	}
	require.False(t, VersionLike("app"))
}
