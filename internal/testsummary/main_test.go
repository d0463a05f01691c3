package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The summary shows what plain go test shows (ok/FAIL lines, a failed
// test's output, not a passed one's) and then the slowest tests.
func TestSummaryKeepsGoTestLinesAndListsTheSlowest(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestFast"}`,
		`{"Action":"output","Package":"p","Test":"TestFast","Output":"=== RUN   TestFast\n"}`,
		`{"Action":"output","Package":"p","Test":"TestFast","Output":"passed output\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestFast","Elapsed":0.5}`,
		`{"Action":"output","Package":"p","Test":"TestSlow","Output":"    x_test.go:9: expected 3, actual 9\n"}`,
		`{"Action":"output","Package":"p","Test":"TestSlow","Output":"--- FAIL: TestSlow (7.25s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestSlow","Elapsed":7.25}`,
		`{"Action":"pass","Package":"p","Test":"TestSlow/Sub","Elapsed":9}`,
		`{"Action":"output","Package":"p","Output":"FAIL\n"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t8.0s\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":8}`,
		`{"Action":"output","Package":"q","Output":"PASS\n"}`,
		`{"Action":"output","Package":"q","Output":"ok  \tq\t1.0s\n"}`,
		`{"Action":"pass","Package":"q","Elapsed":1}`,
		`not json`,
	}, "\n")
	var out strings.Builder
	require.NoError(t, run(strings.NewReader(in), &out))
	got := out.String()
	require.Contains(t, got, "expected 3, actual 9")
	require.Contains(t, got, "--- FAIL: TestSlow (7.25s)\nFAIL\nFAIL\tp\t8.0s\n")
	require.Contains(t, got, "ok  \tq\t1.0s\n")
	require.Contains(t, got, "not json\n")
	require.NotContains(t, got, "passed output")
	require.NotContains(t, got, "PASS\n")
	require.Contains(t, got, "slowest tests (seconds, wall clock; parallel tests overlap):\n    7.25  p TestSlow\n    0.50  p TestFast\n")
	require.NotContains(t, got, "TestSlow/Sub", "subtests are in their parent's time")
	require.Contains(t, got, "slowest packages (seconds, wall clock; parallel tests overlap):\n    8.00  p\n    1.00  q\n")
}
