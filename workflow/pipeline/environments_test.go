package pipeline

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const goodEnvironments = `environments:
  staging:
    promote_to: production
  production:
    reviewers:
      count: 2
      roles: [approver, admin]
      timeout: 24h
    wait: 10m
    versions: '^[0-9]+\.[0-9]+\.[0-9]+$'
    requires: {env: staging, soak: 30m}
    freeze:
      - {from: "Fri 16:00", to: "Mon 08:00", tz: "Europe/Berlin", reason: "weekend"}
      - {from: "22:00", to: "06:00"}
    on_failure: ask
  sandbox:
`

func TestParseEnvironmentsReadsEveryRule(t *testing.T) {
	t.Parallel()
	r, err := ParseEnvironments("environments.yaml", []byte(goodEnvironments))
	require.NoError(t, err)
	require.Len(t, r.All(), 3)
	require.Equal(t, "production", r.Get("staging").PromoteTo)
	p := r.Get("production")
	require.Equal(t, 2, p.Reviewers.Count)
	require.Equal(t, []string{"approver", "admin"}, p.Reviewers.Roles)
	require.Equal(t, 24*time.Hour, p.Reviewers.Timeout)
	require.Equal(t, 10*time.Minute, p.Wait)
	require.True(t, p.VersionOK("1.2.3"))
	require.False(t, p.VersionOK("latest"))
	require.Equal(t, "staging", p.Requires.Env)
	require.Equal(t, 30*time.Minute, p.Requires.Soak)
	require.Len(t, p.Freeze, 2)
	require.Equal(t, "weekend", p.Freeze[0].Reason)
	require.Equal(t, "freeze window 22:00–06:00", p.Freeze[1].Reason)
	require.Equal(t, "ask", p.OnFailure)
	require.NotNil(t, r.Get("sandbox"))
	require.Nil(t, r.Get("qa"))
}

func TestParseEnvironmentsNamesTheLineAtFault(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, doc string
		line      int
		want      string
	}{
		{"UnknownField", "environments:\n  prod:\n    reviewer: {count: 2}\n", 3, "unknown field"},
		{"CountZero", "environments:\n  prod:\n    reviewers:\n      count: 0\n", 4, "count 0"},
		{"UnknownRole", "environments:\n  prod:\n    reviewers:\n      roles: [boss]\n", 4, "unknown role"},
		{"BadRegexp", "environments:\n  prod:\n    versions: '('\n", 3, "not a regular expression"},
		{"BadWindow", "environments:\n  prod:\n    freeze:\n      - {from: \"Fri 16:00\", to: \"08:00\"}\n", 4, "both name a day"},
		{"BadZone", "environments:\n  prod:\n    freeze:\n      - {from: \"16:00\", to: \"08:00\", tz: Nowhere/Land}\n", 4, "time zone"},
		{"RequiresWithoutEnv", "environments:\n  prod:\n    requires: {soak: 1h}\n", 3, "requires needs env"},
		{"PromoteToItself", "environments:\n  prod:\n    promote_to: prod\n", 2, "names itself"},
		{"BadWait", "environments:\n  prod:\n    wait: soon\n", 3, "positive duration"},
		{"Syntax", "environments:\n  prod: [\n", 2, "invalid YAML"},
		{"OnFailure", "environments:\n  prod:\n    on_failure: panic\n", 3, "on_failure"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseEnvironments("dir/environments.yaml", []byte(c.doc))
			var le *LoadError
			require.True(t, errors.As(err, &le), "%v", err)
			require.Equal(t, "dir/environments.yaml", le.Path)
			require.Equal(t, c.line, le.Line, le.Error())
			require.Contains(t, le.Reason, c.want)
		})
	}
}

func TestLoadDirSkipsTheEnvironmentsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, EnvironmentsFile), []byte(goodEnvironments), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "svc.yaml"), []byte(good), 0o600))
	ps, err := LoadDir(dir)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	r, err := LoadEnvironments(dir)
	require.NoError(t, err)
	require.NotNil(t, r.Get("production"))
	// A folder without the file has no rules.
	r, err = LoadEnvironments(t.TempDir())
	require.NoError(t, err)
	require.Empty(t, r.All())
}

func TestPipelineEnvironmentField(t *testing.T) {
	t.Parallel()
	doc := "name: svc\nparams:\n  - {name: stage, type: enum, values: [qa, prod]}\n  - {name: env, type: string}\nenvironment: stage\nsteps:\n  - {name: a, action: noop}\n"
	p, err := Parse("svc.yaml", []byte(doc))
	require.NoError(t, err)
	require.Equal(t, "stage", p.EnvironmentParam())
	require.Equal(t, "prod", p.EnvironmentOf(map[string]any{"stage": "prod", "env": "x"}))
	// Without the field: env, if there is one.
	p.Environment = ""
	require.Equal(t, "x", p.EnvironmentOf(map[string]any{"stage": "prod", "env": "x"}))

	_, err = Parse("svc.yaml", []byte("name: svc\nparams:\n  - {name: app, type: string}\nenvironment: stage\nsteps:\n  - {name: a, action: noop}\n"))
	var le *LoadError
	require.True(t, errors.As(err, &le))
	require.Equal(t, 4, le.Line)
}

func TestDemoEnvironmentsLoad(t *testing.T) {
	t.Parallel()
	r := DemoEnvironments()
	require.Equal(t, "production", r.Get("staging").PromoteTo)
	require.Equal(t, 2, r.Get("production").Reviewers.Count)
	require.NotEmpty(t, r.Get("production").Freeze)
	// The tour's guided failure: a failed step in qa waits for a person.
	require.Equal(t, "ask", r.Get("qa").OnFailure)
	require.Equal(t, "staging", r.Get("qa").PromoteTo)
}

// The tour's deploy to watch deploys into the demo's environments, qa
// (guided failure) first.
func TestRolloutDeploysToTheDemoEnvironments(t *testing.T) {
	t.Parallel()
	c, err := NewCatalog(Builtin()...)
	require.NoError(t, err)
	p, ok := c.Get("web-service-rollout")
	require.True(t, ok)
	r := DemoEnvironments()
	for _, prm := range p.Params {
		if prm.Name == p.Environment {
			require.Equal(t, "qa", prm.Default)
			for _, v := range prm.Values {
				require.NotNil(t, r.Get(v), "environment %s has rules in the demo", v)
			}
		}
	}
}
