package pipeline

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckActions(t *testing.T) {
	t.Parallel()
	schemas := map[string]ActionSchema{
		"noop": {},
		"exec": {Inputs: []string{"command", "env", "dir"}},
		"test.check": {Check: func(with map[string]any) (string, error) {
			if with["size"] == "huge" {
				return "size", errors.New("too big")
			}
			return "", nil
		}},
	}
	load := func(t *testing.T, src string) error {
		t.Helper()
		p, err := Parse("p.yaml", []byte(src))
		require.NoError(t, err)
		c, err := NewCatalog(p)
		require.NoError(t, err)
		return c.CheckActions(schemas)
	}
	cases := []struct {
		name, src string
		line      int
		reason    string
	}{
		{"UnknownAction", "name: p\nsteps:\n  - name: a\n    action: noop\n  - name: b\n    action: local.traffic_shiftt\n", 6, `action "local.traffic_shiftt" is not an action of this server`},
		{"UnknownCompensation", "name: p\nsteps:\n  - name: a\n    action: noop\n    compensate:\n      action: nope\n", 6, `step "a": compensate: action "nope"`},
		{"UnknownInGroup", "name: p\nsteps:\n  - parallel:\n      steps:\n        - {name: a, action: noop}\n        - name: b\n          action: nope\n", 7, `action "nope"`},
		{"WithItCannotTake", "name: p\nsteps:\n  - name: a\n    action: exec\n    with:\n      command: [echo]\n      comand: [echo]\n", 7, "exec takes no with.comand"},
		{"CheckNamesItsField", "name: p\nsteps:\n  - name: a\n    action: test.check\n    with:\n      colour: red\n      size: huge\n", 7, "too big"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := load(t, tc.src)
			var le *LoadError
			require.ErrorAs(t, err, &le)
			require.Equal(t, "p.yaml", le.Path)
			require.Equal(t, tc.line, le.Line, le.Error())
			require.Contains(t, le.Reason, tc.reason)
		})
	}
	t.Run("KnownActionsLoad", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, load(t, "name: p\nsteps:\n  - name: a\n    action: exec\n    with: {command: [echo], env: {A: b}}\n    compensate: {action: noop, with: {any: thing}}\n"))
	})
	t.Run("GoBuiltinNamesItself", func(t *testing.T) {
		t.Parallel()
		c, err := NewCatalog(&Pipeline{Name: "x", Steps: []Step{{Name: "a", Action: "gone"}}})
		require.NoError(t, err)
		err = c.CheckActions(schemas)
		require.ErrorContains(t, err, "built-in pipeline x:1: step \"a\": action \"gone\"")
	})
}
