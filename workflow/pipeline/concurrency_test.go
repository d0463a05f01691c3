package pipeline

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

const keyed = `
name: keyed
params:
  - {name: app, type: string, required: true}
  - {name: version, type: string, required: true}
  - {name: env, type: enum, values: [staging, production], default: staging}
  - {name: pw, type: string, secret: true}
%s
steps:
  - {name: one, action: noop}
`

func TestConcurrencyAndTarget(t *testing.T) {
	params := map[string]any{"app": "shop", "version": "1.2.3", "env": "staging", "pw": "hush"}
	for _, tt := range []struct {
		name, block   string
		target        []string
		template, key string
		policy        string
	}{
		{"NoBlock", ``, []string{"app", "env"}, "", "", ""},
		{"DefaultKey", "concurrency: {}", []string{"app", "env"}, "keyed:{{ .params.app }}:{{ .params.env }}", "keyed:shop:staging", "queue"},
		{"DeclaredTarget", "target: [app]\nconcurrency: {policy: cancel_newest}", []string{"app"}, "keyed:{{ .params.app }}", "keyed:shop", "cancel_newest"},
		{"OwnKey", `concurrency: {key: "{{ .params.app }}-{{ .params.env }}", policy: cancel_in_progress}`, []string{"app", "env"},
			"{{ .params.app }}-{{ .params.env }}", "shop-staging", "cancel_in_progress"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("keyed.yaml", []byte(fmt.Sprintf(keyed, tt.block)))
			require.NoError(t, err)
			require.Equal(t, tt.target, p.TargetParams())
			require.Equal(t, tt.template, p.KeyTemplate())
			key, policy, err := p.ConcurrencyKey(params)
			require.NoError(t, err)
			require.Equal(t, tt.key, key)
			require.Equal(t, tt.policy, policy)
			require.Equal(t, map[string]any{}, mapWithout(p.TargetOf(params), tt.target...))
		})
	}
	for _, tt := range []struct{ block, want string }{
		{"target: [region]", `"region" is not a parameter`},
		{"target: [app, app]", "named twice"},
		{"target: [app, pw]", `"pw" is a secret parameter`},
		{"concurrency: {policy: newest}", `policy "newest"`},
		{`concurrency: {key: "{{ .task.id }}"}`, ".task is not known yet"},
		{`concurrency: {key: "{{ .params.nope }}"}`, "unknown parameter"},
		{`concurrency: {key: ""}`, "key is empty"},
		{"concurrency: {limit: 2}", `unknown field "limit"`},
	} {
		_, err := Parse("keyed.yaml", []byte(fmt.Sprintf(keyed, tt.block)))
		var le *LoadError
		require.True(t, errors.As(err, &le), "%s: %v", tt.block, err)
		require.Contains(t, le.Reason, tt.want)
	}
}

func mapWithout(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}
