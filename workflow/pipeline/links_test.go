package pipeline

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

const linked = `name: shop
params:
  - {name: app, type: string, required: true}
  - {name: version, type: string, required: true}
links:
  version: "http://127.0.0.1:3000/{{ .params.app }}/releases/tag/v{{ .params.version }}"
  compare: "https://127.0.0.1:3000/{{ .params.app }}/compare/{{ .from.version }}...{{ .to.version }}"
steps:
  - {name: deploy, action: noop}
`

func TestLinksLoadAndRender(t *testing.T) {
	t.Parallel()
	p, err := Parse("dir/shop.yaml", []byte(linked))
	require.NoError(t, err)
	params := map[string]any{"app": "shop", "version": "1.2.3"}
	require.Equal(t, "http://127.0.0.1:3000/shop/releases/tag/v1.2.3", p.VersionURL(params))
	require.Equal(t, "https://127.0.0.1:3000/shop/compare/1.2.2...1.2.3", p.CompareURL("1.2.2", "1.2.3", params))
	// No previous version: no compare link.
	require.Empty(t, p.CompareURL("", "1.2.3", params))
	// A param cannot leave its path segment: no new path, query or host.
	require.Equal(t, "http://127.0.0.1:3000/shop/releases/tag/v1.2.3%2F..%2F..%3Fx=1", p.VersionURL(map[string]any{"app": "shop", "version": "1.2.3/../..?x=1"}))
	// A pipeline without links links nothing.
	plain, err := Parse("dir/plain.yaml", []byte("name: plain\nsteps:\n  - {name: a, action: noop}\n"))
	require.NoError(t, err)
	require.Empty(t, plain.VersionURL(params))
	require.Empty(t, plain.CompareURL("1", "2", params))
}

// A template that is all a param: the rendering is checked every time, so
// a version like javascript:alert(1) never becomes a link.
func TestLinksRenderOnlyHTTP(t *testing.T) {
	t.Parallel()
	p, err := Parse("dir/shop.yaml", []byte(`name: shop
params:
  - {name: version, type: string, required: true}
  - {name: base, type: string, default: "http://127.0.0.1:3000"}
links:
  version: "{{ .params.base }}/v{{ .params.version }}"
steps:
  - {name: deploy, action: noop}
`))
	// The sample rendering ("1.2.3/v1.2.3") is not an http URL: refused at load.
	var le *LoadError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Nil(t, p)
	require.Contains(t, le.Reason, "not an http or https URL")

	// And at render time, whatever a param holds: a template built in Go
	// (not checked at load) that is all a param links nothing unsafe.
	tm, err := parseLinkTemplate("version", "{{ .params.version }}")
	require.NoError(t, err)
	bare := &Pipeline{Links: &Links{version: tm}}
	// (A whole URL in a param is no link either: its slashes are escaped.)
	for _, v := range []string{"javascript:alert(1)", "data:text/html,x", "//127.0.0.1/x", "1.2.3", "http://127.0.0.1/x"} {
		require.Empty(t, bare.VersionURL(map[string]any{"version": v}), v)
	}
}

func TestLinksLoadErrors(t *testing.T) {
	t.Parallel()
	head := "name: shop\nparams:\n  - {name: version, type: string}\nlinks:\n"
	for _, c := range []struct {
		name, links string
		line        int
		want        string
	}{
		{"Unparsable", "  version: \"http://127.0.0.1/v{{ .params.version \"\n", 5, "links: version"},
		{"JavaScript", "  version: \"javascript:alert({{ .params.version }})\"\n", 5, "not an http or https URL"},
		{"NoHost", "  version: \"/releases/{{ .params.version }}\"\n", 5, "not an http or https URL"},
		{"UnknownParam", "  version: \"http://127.0.0.1/{{ .params.nope }}\"\n", 5, "nope"},
		{"CompareUnknownSide", "  compare: \"http://127.0.0.1/{{ .from.sha }}\"\n", 5, "links: compare"},
		{"CompareData", "  compare: \"data:text/html,{{ .to.version }}\"\n", 5, "not an http or https URL"},
		{"UnknownField", "  release: \"http://127.0.0.1/\"\n", 5, "unknown field"},
		{"NotAMapping", "  - \"http://127.0.0.1/\"\n", 5, "links"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			doc := head + c.links + "steps:\n  - {name: a, action: noop}\n"
			_, err := Parse("dir/shop.yaml", []byte(doc))
			var le *LoadError
			require.True(t, errors.As(err, &le), "%v", err)
			require.Equal(t, "dir/shop.yaml", le.Path)
			require.Equal(t, c.line, le.Line, le.Error())
			require.Contains(t, le.Reason, c.want)
		})
	}
}
