package handlers

import (
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/views/components"
	"flightdeck/workflow/pipeline"
)

func lines(ss ...string) []components.LogLine {
	out := make([]components.LogLine, len(ss))
	for i, s := range ss {
		out[i] = components.LogLine{Seq: i + 1, N: i + 1, Text: s}
	}
	return out
}

// The run page reads an analysis's measurements from its log lines, the
// last attempt's only, and a shift's share from its with or its log.
func TestRunPageCanaryViews(t *testing.T) {
	t.Parallel()
	an := pipeline.PlannedStep{Step: pipeline.Step{Action: "analysis"}}
	a := analysisView(an, lines(
		"Sending 20 requests a second for / to shop.staging through flightdeck's proxy",
		"measurement 1 of 3: error_rate 0.5, wants <= 0.05: failed",
		"measurement 1 of 3: error_rate 0, wants <= 0.05: ok", // a resumed attempt starts over
		"measurement 2 of 3: error_rate none, wants <= 0.05: failed (2 requests in the window, fewer than min_requests 10)",
	))
	require.NotNil(t, a)
	require.Equal(t, "error_rate", a.Metric)
	require.Equal(t, "<= 0.05", a.Success)
	require.Equal(t, 0.05, a.Threshold)
	require.Equal(t, 3, a.Count)
	require.Len(t, a.Points, 2)
	require.True(t, a.Points[0].OK)
	require.Equal(t, 0.0, *a.Points[0].Value)
	require.False(t, a.Points[1].OK)
	require.Nil(t, a.Points[1].Value)
	require.Equal(t, "2 requests in the window, fewer than min_requests 10", a.Points[1].Reason)
	require.Nil(t, analysisView(pipeline.PlannedStep{Step: pipeline.Step{Action: "exec"}}, lines("measurement 1 of 3: x 1, wants < 2: ok")))
	require.Nil(t, analysisView(an, nil), "no measurement yet: no chart")

	literal := pipeline.PlannedStep{Step: pipeline.Step{Action: "local.traffic_shift", With: map[string]any{"weight": 20}}}
	require.Equal(t, "20 %", shiftShare(literal, nil))
	templated := pipeline.PlannedStep{Step: pipeline.Step{Action: "local.traffic_shift", With: map[string]any{"weight": "{{ .params.w }}"}}}
	require.Equal(t, "", shiftShare(templated, nil), "not run yet")
	require.Equal(t, "35 %", shiftShare(templated, lines("Route a.b: canary 2.0.0 receives 35 % of the requests (was 0 %)")))
	require.Equal(t, "100 %", shiftShare(templated, lines("Route a.b: canary 2.0.0 now serves every request; the instance it replaced stays for an undo")))
}
