package handlers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/views/pages"
	"flightdeck/workflow/environment"
)

// twoSources is e2e/pipelines/environments.yaml's shape: two environments
// promote into one (e2e-staging and e2e-frozen into e2e-prod).
func twoSources() *environment.Rules {
	return environment.NewRules(
		&environment.Env{Name: "production"},
		&environment.Env{Name: "staging", PromoteTo: "production"},
		&environment.Env{Name: "hotfix", PromoteTo: "production"},
		&environment.Env{Name: "dev", PromoteTo: "staging"},
		&environment.Env{Name: "loop-a", PromoteTo: "loop-b"},
		&environment.Env{Name: "loop-b", PromoteTo: "loop-a"},
	)
}

// TestPromotionOrderTwoSources: an environment comes after every one that
// promotes into it, however the chains' starts sort (hotfix sorts before
// staging, yet production stays after staging); the rest by name; a cycle
// in the rules ends.
func TestPromotionOrderTwoSources(t *testing.T) {
	t.Parallel()
	rules := twoSources()
	require.Equal(t, []string{"dev", "hotfix", "staging", "production", "qa"},
		promotionOrder(rules, []string{"qa", "production", "staging", "hotfix", "dev"}))
	require.Equal(t, []string{"hotfix", "staging", "production"}, promotionOrder(rules, []string{"production", "staging", "hotfix"}))
	require.Equal(t, []string{"staging", "production"}, promotionOrder(rules, []string{"production", "staging"}))
	require.ElementsMatch(t, []string{"loop-a", "loop-b"}, promotionOrder(rules, []string{"loop-b", "loop-a"}))
}

// TestReadinessSourceOfTwo: with two environments promoting into
// production, the one with a deploy of the row is the source (not the
// first by name, which has nothing to promote).
func TestReadinessSourceOfTwo(t *testing.T) {
	t.Parallel()
	rules := twoSources()
	envs := promotionOrder(rules, []string{"production", "staging", "hotfix"})
	row := map[string]*pages.EnvTarget{
		"hotfix":  {Environment: "hotfix"},
		"staging": {Environment: "staging", Current: &pages.EnvDeploy{Version: "1.4.0"}},
	}
	c := pages.OverviewCell{Env: "production"}
	readiness(&c, rules, envs, row, time.Now())
	require.Equal(t, "ready", c.Ready, c.ReadyText)
	require.Contains(t, c.ReadyText, "1.4.0 from staging")
}

// TestReadinessSourceThatChangesSomething: of two sources with a deploy,
// the one whose version already runs in production is not offered.
func TestReadinessSourceThatChangesSomething(t *testing.T) {
	t.Parallel()
	rules := twoSources()
	envs := promotionOrder(rules, []string{"production", "staging", "hotfix"})
	row := map[string]*pages.EnvTarget{
		"hotfix":     {Environment: "hotfix", Current: &pages.EnvDeploy{Version: "1.4.0"}},
		"staging":    {Environment: "staging", Current: &pages.EnvDeploy{Version: "1.5.0"}},
		"production": {Environment: "production", Current: &pages.EnvDeploy{Version: "1.4.0"}},
	}
	c := pages.OverviewCell{Env: "production", Deploy: row["production"]}
	readiness(&c, rules, envs, row, time.Now())
	require.Equal(t, "ready", c.Ready, c.ReadyText)
	require.Contains(t, c.ReadyText, "1.5.0 from staging")
}
