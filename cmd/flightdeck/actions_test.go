package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/config"
	"flightdeck/workflow/pipeline"
)

// The catalog knows the server's actions when it loads (contract §6, §11):
// the built-ins and the end-to-end pipelines load; a step naming an action
// the server lacks, or an analysis missing what its provider needs, does not.
func TestCatalogChecksActions(t *testing.T) {
	t.Parallel()
	t.Run("BuiltinsAndE2EPipelinesLoad", func(t *testing.T) {
		t.Parallel()
		c, err := loadCatalog(config.Config{PipelinesDir: filepath.Join("..", "..", "e2e", "pipelines")})
		require.NoError(t, err)
		_, ok := c.Get("web-service-canary")
		require.True(t, ok)
	})
	bad := []struct {
		name, steps string
		line        int
		reason      string
	}{
		{"UnknownAction", "  - name: a\n    action: local.traffic_shiftt\n", 5, `action "local.traffic_shiftt" is not an action of this server`},
		{"WithTheActionCannotTake", "  - name: a\n    action: local.traffic_shift\n    with: {host: a.b, wieght: 20}\n", 6, "local.traffic_shift takes no with.wieght"},
		{"AnalysisWithoutProvider", "  - name: a\n    action: analysis\n    with:\n      metric: error_rate\n      success: '<= 1'\n", 6, "with.provider: is missing"},
		{"SuccessDoesNotParse", "  - name: a\n    action: analysis\n    with:\n      provider: proxy\n      metric: error_rate\n      success: '<= abc'\n", 9, `after <= comes a number ("abc" is not one)`},
		{"PrometheusWithoutQuery", "  - name: a\n    action: analysis\n    with:\n      provider: prometheus\n      url: http://127.0.0.1:9090\n      success: '< 1'\n", 6, "with.query: is missing"},
		{"ProxyUnknownMetric", "  - name: a\n    action: analysis\n    with:\n      provider: proxy\n      metric: errors\n      success: '< 1'\n", 8, `"errors" is not a proxy metric`},
		{"LoadRateOutOfRange", "  - name: a\n    action: analysis\n    with:\n      provider: proxy\n      metric: requests\n      success: '> 1'\n      load: {rate: 0}\n", 10, "with.load.rate: want requests a second from 1 to 1000"},
		{"FailureLimitAllowsAll", "  - name: a\n    action: analysis\n    with:\n      provider: proxy\n      metric: requests\n      success: '> 1'\n      count: 2\n      failure_limit: 2\n", 11, "below count"},
		{"AnalysisFieldTypo", "  - name: a\n    action: analysis\n    with:\n      provider: proxy\n      metric: requests\n      success: '> 1'\n      intervall: 1s\n", 10, "analysis takes no with.intervall"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "p.yaml")
			require.NoError(t, os.WriteFile(path, []byte("name: p\ndescription: x\nsteps:\n"+tc.steps), 0o600))
			_, err := loadCatalog(config.Config{PipelinesDir: dir})
			var le *pipeline.LoadError
			require.ErrorAs(t, err, &le)
			require.Equal(t, path, le.Path)
			require.Equal(t, tc.line, le.Line, le.Error())
			require.Contains(t, le.Reason, tc.reason)
		})
	}
	t.Run("TemplatesAreLeftForTheRun", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(`name: p
params: [{name: limit, type: string}]
steps:
  - name: a
    action: analysis
    with: {provider: proxy, host: a.b, metric: error_rate, success: "{{ .params.limit }}", count: "{{ .params.limit }}"}
`), 0o600))
		_, err := loadCatalog(config.Config{PipelinesDir: dir})
		require.NoError(t, err)
	})
}
