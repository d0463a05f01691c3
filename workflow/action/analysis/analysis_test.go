package analysis

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/action"
)

func TestParseThreshold(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]Threshold{"<= 0.05": {"<=", 0.05}, "<1": {"<", 1}, " >= 3 ": {">=", 3}, "== 0": {"==", 0}, "!= 2": {"!=", 2}, "> -1.5": {">", -1.5}} {
		got, err := ParseThreshold(s)
		require.Nil(t, err, s)
		require.Equal(t, want, got, s)
	}
	for _, s := range []string{"<= abc", "0.05", "=< 1", "<= NaN", "<= Inf", "", "<="} {
		_, err := ParseThreshold(s)
		require.NotNil(t, err, s)
		require.Equal(t, "success", err.Field)
	}
	require.True(t, Threshold{"<=", 0.05}.OK(0.05))
	require.False(t, Threshold{"<", 0.05}.OK(0.05))
}

// run runs the action with a prometheus provider against base and returns
// its log and error.
func runProm(t *testing.T, a *Action, base string, extra map[string]any) (string, error) {
	t.Helper()
	with := map[string]any{"provider": "prometheus", "url": base, "query": "up", "success": "< 1", "interval": "10ms", "count": 2, "failure_limit": 1}
	for k, v := range extra {
		with[k] = v
	}
	var log bytes.Buffer
	_, err := a.Run(t.Context(), action.Input{With: with, Log: func(l string) { log.WriteString(l + "\n") }, Output: &bytes.Buffer{}})
	return log.String(), err
}

// A Prometheus that is down, slow, answers garbage, an error or several
// samples gives failed measurements with their reason, never a panic or a
// step that hangs.
func TestPrometheusBadAnswers(t *testing.T) {
	t.Parallel()
	answer := func(body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/v1/query" || r.URL.Query().Get("query") != "up" {
				http.NotFound(w, r)
				return
			}
			if body == "slow" {
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
				return
			}
			w.Write([]byte(body)) //nolint:errcheck
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	a := New(Config{QueryTimeout: 200 * time.Millisecond})
	cases := map[string]struct{ base, reason string }{
		"Down":       {down, "prometheus: Get"},
		"Slow":       {answer("slow"), "prometheus did not answer within 200ms"},
		"Garbage":    {answer("<html>hello</html>"), "prometheus answered 200 with something that is not its API's JSON"},
		"Error":      {answer(`{"status":"error","errorType":"bad_data","error":"parse error at char 3"}`), "prometheus: bad_data: parse error at char 3"},
		"Empty":      {answer(`{"status":"success","data":{"resultType":"vector","result":[]}}`), "the query returned 0 samples"},
		"Several":    {answer(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]},{"metric":{},"value":[1,"2"]}]}}`), "the query returned 2 samples; it must return one"},
		"Matrix":     {answer(`{"status":"success","data":{"resultType":"matrix","result":[]}}`), "the query returned a matrix"},
		"NaN":        {answer(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"NaN"]}]}}`), "the query's value is NaN"},
		"NotANumber": {answer(`{"status":"success","data":{"resultType":"scalar","result":[1,"x"]}}`), `prometheus: the value "x" is not a number`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log, err := runProm(t, a, tc.base, nil)
			require.ErrorContains(t, err, "analysis failed: query none, none, wants < 1; 2 of 2 measurements failed (failure_limit 1)")
			require.Contains(t, log, "measurement 1 of 2: query none, wants < 1: failed ("+tc.reason, log)
		})
	}
	t.Run("OneSamplePasses", func(t *testing.T) {
		t.Parallel()
		base := answer(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0.25"]}]}}`)
		log, err := runProm(t, a, base, nil)
		require.NoError(t, err)
		require.Contains(t, log, "measurement 2 of 2: query 0.25, wants < 1: ok")
	})
	t.Run("CancelStops", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := a.Run(ctx, action.Input{With: map[string]any{"provider": "prometheus", "url": down, "query": "up", "success": "< 1", "interval": "1h"},
			Log: func(string) {}, Output: &bytes.Buffer{}})
		require.ErrorIs(t, err, context.Canceled)
	})
}
