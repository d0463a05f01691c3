package pipeline

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTargetKey(t *testing.T) {
	t.Parallel()
	declared := &Pipeline{Name: "d", Target: []string{"env", "app"}, Params: []Param{
		{Name: "app", Type: "string"}, {Name: "version", Type: "string"}, {Name: "env", Type: "string"}, {Name: "replicas", Type: "int"}}}
	byDefault := &Pipeline{Name: "x", Params: []Param{
		{Name: "app", Type: "string"}, {Name: "version", Type: "string"}, {Name: "pw", Type: "string", Secret: true}, {Name: "n", Type: "int"}}}
	none := &Pipeline{Name: "n", Params: []Param{{Name: "version", Type: "string"}}}
	for _, tc := range []struct {
		name   string
		p      *Pipeline
		params map[string]any
		want   string
	}{
		{"DeclaredTargetSortedKeys", declared, map[string]any{"app": "shop", "version": "1", "env": "prod", "replicas": int64(2)}, `{"app":"shop","env":"prod"}`},
		{"DefaultSkipsVersionAndSecrets", byDefault, map[string]any{"app": "a", "version": "1", "pw": "s", "n": int64(3)}, `{"app":"a","n":3}`},
		{"NumbersReadBackCompareEqual", byDefault, map[string]any{"app": "a", "n": float64(3)}, `{"app":"a","n":3}`},
		{"EmptyTargetHasNoKey", none, map[string]any{"version": "1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.p.TargetKey(tc.params))
		})
	}
}

func TestVersionParam(t *testing.T) {
	t.Parallel()
	for want, params := range map[string][]Param{
		"version":     {{Name: "tag", Type: "string"}, {Name: "version", Type: "string"}},
		"image_tag":   {{Name: "image_tag", Type: "string"}},
		"app_version": {{Name: "app_version", Type: "enum"}},
		"":            {{Name: "version", Type: "int"}, {Name: "tag", Type: "string", Secret: true}},
	} {
		require.Equal(t, want, (&Pipeline{Params: params}).VersionParam(), "params %v", params)
	}
}
