package pipeline

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDeploys(t *testing.T) {
	t.Parallel()
	byName := map[string]*Pipeline{}
	for _, p := range Builtin() {
		byName[p.Name] = p
	}
	for name, want := range map[string]bool{
		"web-service":   true,  // declares target [app, env]
		"canary":        true,  // a version parameter: ships versions to its default target
		"health-check":  false, // checks: no version, no declared target
		"noop":          false,
		"approval-demo": false,
		"static-site":   true, // declares target [site, env]
	} {
		require.Equal(t, want, byName[name].Deploys(), name)
	}
	require.False(t, (&Pipeline{Target: []string{}, Params: []Param{{Name: "version"}}}).Deploys(), "an empty target declared says: not a deploy")
	require.True(t, (&Pipeline{Target: []string{"site"}, Params: []Param{{Name: "site"}}}).Deploys())
}
