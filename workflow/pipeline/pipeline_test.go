package pipeline

import (
	"encoding/json"
	"maps"
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
		// the empty object skips the decoder; the schema still applies
		{"EmptyObjectMissingRequired", ` { } `, "params.app"},
		{"EmptyMissingRequired", ``, "params.app"},
		{"NullMissingRequired", `null`, "params.app"},
		{"NotAnObjectString", `"x"`, "params"},
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
	require.Equal(t, []string{"approval-demo", "canary", "health-check", "noop", "static-site", "web-service", "web-service-canary", "web-service-rollout"}, names)
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

func TestSplitSecrets(t *testing.T) {
	t.Parallel()
	p := &Pipeline{Name: "s", Params: []Param{
		{Name: "app", Type: "string"},
		{Name: "password", Type: "string", Secret: true},
		{Name: "pin", Type: "int", Secret: true},
		{Name: "token", Type: "string", Secret: true},
	}}
	tests := []struct {
		name           string
		params         map[string]any
		public, secret map[string]any
	}{
		{"NoSecretSet", map[string]any{"app": "shop"}, map[string]any{"app": "shop"}, nil},
		{"SecretsMovedAndShownAsSet", map[string]any{"app": "shop", "password": "pw", "pin": int64(1234)},
			map[string]any{"app": "shop", "password": Redacted, "pin": Redacted}, map[string]any{"password": "pw", "pin": int64(1234)}},
		{"Empty", map[string]any{}, map[string]any{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := maps.Clone(tt.params)
			public, secret := p.SplitSecrets(tt.params)
			require.Equal(t, tt.public, public)
			require.Equal(t, tt.secret, secret)
			require.Equal(t, tt.public, p.Public(tt.params))
			require.Equal(t, before, tt.params, "the input is left as it is")
			merged := maps.Clone(public)
			maps.Copy(merged, secret)
			require.Equal(t, tt.params, merged, "secret over public gives params back")
		})
	}
}
