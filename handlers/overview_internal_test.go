package handlers

import (
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/environment"
)

// TestEnvOrder: environments by how far along their promote_to chain they
// are (two sources of one environment before it, by name), then the rest
// by name; an environment a present one promotes into keeps its column.
func TestEnvOrder(t *testing.T) {
	t.Parallel()
	rules := environment.NewRules(
		&environment.Env{Name: "production"},
		&environment.Env{Name: "staging", PromoteTo: "production"},
		&environment.Env{Name: "hotfix", PromoteTo: "production"},
		&environment.Env{Name: "dev", PromoteTo: "staging"},
		&environment.Env{Name: "loop-a", PromoteTo: "loop-b"},
		&environment.Env{Name: "loop-b", PromoteTo: "loop-a"},
	)
	present := func(envs ...string) map[string]bool {
		m := map[string]bool{}
		for _, e := range envs {
			m[e] = true
		}
		return m
	}
	require.Equal(t, []string{"dev", "hotfix", "staging", "production", "qa"},
		envOrder(rules, present("qa", "production", "staging", "hotfix", "dev")))
	require.Equal(t, []string{"staging", "production"}, envOrder(rules, present("staging")))
	require.Equal(t, []string{"a", "b"}, envOrder(rules, present("b", "a")))
	require.Len(t, envOrder(rules, present("loop-a")), 2, "a cycle in the rules ends")
}
