package handlers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/store"
	"flightdeck/views/pages"
)

// TestPreviousIsOlder: "Roll back to" only offers an older version; after
// a roll back, the previous deploy is the newer version and is redeployed.
func TestPreviousIsOlder(t *testing.T) {
	t.Parallel()
	d := func(v string) pages.EnvDeploy { return pages.EnvDeploy{Version: v} }
	target := func(history ...string) pages.EnvTarget {
		t := pages.EnvTarget{}
		for _, v := range history {
			t.History = append(t.History, d(v))
		}
		if len(t.History) > 0 {
			t.Current = &t.History[0]
		}
		if len(t.History) > 1 {
			t.Previous = &t.History[1]
		}
		return t
	}
	for _, tc := range []struct {
		name    string
		history []string // newest first
		want    bool
	}{
		{"TwoVersions", []string{"2.0.0", "1.0.0"}, true},
		{"AfterARollBack", []string{"1.0.0", "2.0.0", "1.0.0"}, false},
		{"SameVersionAgain", []string{"2.0.0", "2.0.0", "1.0.0"}, false},
		{"RolledForwardAgain", []string{"2.0.0", "1.0.0", "2.0.0", "1.0.0"}, true},
		{"OnlyOne", []string{"1.0.0"}, false},
		{"NotSemver", []string{"blue", "green"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, previousIsOlder(target(tc.history...)))
		})
	}
}

// TestEnvHealth says a monitor's finding in words.
func TestEnvHealth(t *testing.T) {
	t.Parallel()
	now := time.Now()
	yes, no := true, false
	checked := now.Add(-2 * time.Minute)
	alert := "GET / answered 503"
	require.Equal(t, "no monitor", envHealth(store.LocalHostHealth{Serving: true}, now).Text)
	require.Equal(t, "pending", envHealth(store.LocalHostHealth{Monitored: true}, now).State)
	ok := envHealth(store.LocalHostHealth{Monitored: true, Healthy: &yes, LastCheckedAt: &checked}, now)
	require.Equal(t, pages.EnvHealth{State: "healthy", Text: "healthy", CheckedAgo: "checked 2 min ago"}, *ok)
	bad := envHealth(store.LocalHostHealth{Monitored: true, Healthy: &no, Alert: &alert}, now)
	require.Equal(t, "unhealthy", bad.State)
	require.Equal(t, alert, bad.Detail)
	require.Equal(t, "shop.staging", localHost(`{"app":"shop","env":"staging"}`))
	require.Equal(t, "", localHost(`{"app":"shop"}`))
}
