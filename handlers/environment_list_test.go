package handlers

import (
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/pipeline"
)

// TestTargetPairs: the environments page shows a target key by targetChips'
// rule, as the list, the inbox and the run page show a deploy's target: in
// the params' order, without secret params (a written target may name one),
// empty values or the version param (a default target may hold it; the
// page shows it as the current version).
func TestTargetPairs(t *testing.T) {
	t.Parallel()
	params := []pipeline.Param{{Name: "app", Type: "string"}, {Name: "tag", Type: "string"}, {Name: "env", Type: "string"},
		{Name: "token", Type: "string", Secret: true}}
	byDefault := &pipeline.Pipeline{Name: "d", Params: params}
	written := &pipeline.Pipeline{Name: "w", Params: params, Target: []string{"env", "token", "app"}}
	for _, c := range []struct {
		name string
		p    *pipeline.Pipeline
		key  string
		want []string
	}{
		{"WrittenTargetInTheParamsOrderWithoutSecrets", written, `{"env":"prod","token":"tok-1","app":"shop"}`, []string{"app=shop", "env=prod"}},
		{"DefaultTargetLessTheVersionParam", byDefault, `{"app":"shop","tag":"v7","env":"prod"}`, []string{"app=shop", "env=prod"}},
		{"NullLeftOut", byDefault, `{"app":"shop","env":null}`, []string{"app=shop"}},
		{"PipelineRemovedSinceShowsTheKeySorted", nil, `{"env":"prod","app":"shop"}`, []string{"app=shop", "env=prod"}},
		{"UnreadableKeyAsItIs", byDefault, `not json`, []string{"not json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, targetPairs(c.p, c.key))
		})
	}
}
