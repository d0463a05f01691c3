package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func catalog(t *testing.T) *Catalog {
	t.Helper()
	c, err := NewCatalog(Builtin()...)
	require.NoError(t, err)
	return c
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ws, ok := catalog(t).Get("web-service")
	require.True(t, ok)
	tests := []struct {
		name, params, field string
	}{
		{"Valid", `{"app":"shop","version":"1.2.3"}`, ""},
		{"MissingRequired", `{"version":"1.2.3"}`, "params.app"},
		{"PatternMismatch", `{"app":"Shop!","version":"1"}`, "params.app"},
		{"ShellMetacharacters", `{"app":"shop; rm -rf /","version":"1"}`, "params.app"},
		{"WrongType", `{"app":7,"version":"1"}`, "params.app"},
		{"EnumOutOfRange", `{"app":"shop","version":"1","env":"prod"}`, "params.env"},
		{"IntTooBig", `{"app":"shop","version":"1","replicas":9}`, "params.replicas"},
		{"IntNotInteger", `{"app":"shop","version":"1","replicas":1.5}`, "params.replicas"},
		{"Unknown", `{"app":"shop","version":"1","colour":"red"}`, "params.colour"},
		{"NotAnObject", `[1,2]`, "params"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ferr := ws.Validate(json.RawMessage(tt.params))
			if tt.field == "" {
				require.Nil(t, ferr)
				require.Equal(t, "staging", out["env"], "default applied")
				require.EqualValues(t, 1, out["replicas"])
				return
			}
			require.NotNil(t, ferr)
			require.Equal(t, tt.field, ferr.Field)
		})
	}
}

func TestCatalog(t *testing.T) {
	t.Parallel()
	c := catalog(t)
	_, ok := c.Get("noop")
	require.True(t, ok)
	var names []string
	for _, p := range c.All() {
		names = append(names, p.Name)
	}
	require.Equal(t, []string{"approval-demo", "canary", "health-check", "noop", "static-site", "web-service"}, names)
	_, err := NewCatalog(&Pipeline{Name: "bad", Params: []Param{{Name: "x", Type: "float"}}})
	require.Error(t, err)
}

func FuzzValidate(f *testing.F) {
	f.Add(`{"app":"shop","version":"1.2.3"}`)
	f.Add(`{"replicas":"x"}`)
	f.Add(`null`)
	c, _ := NewCatalog(Builtin()...)
	ws, _ := c.Get("web-service")
	f.Fuzz(func(t *testing.T, raw string) {
		out, ferr := ws.Validate(json.RawMessage(raw))
		if ferr == nil {
			if _, ok := out["app"].(string); !ok {
				t.Fatalf("accepted params without app: %s", raw)
			}
		}
	})
}
