package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// bench pages fills a small database and prints one JSON line naming every
// route it timed (timings themselves are the benchmark's, never a test's).
func TestBenchPagesPrintsOneLine(t *testing.T) {
	t.Parallel()
	server := os.Getenv("TEST_DATABASE_URL")
	require.NotEmpty(t, server, "TEST_DATABASE_URL is not set: run the tests with `go tool task test`")
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"bench", "pages", "--tasks", "300", "--repeats", "1", "--database-url", server},
		func(string) string { return "" }, &out, &errOut)
	require.NoError(t, err, errOut.String())
	require.Equal(t, 1, bytes.Count(out.Bytes(), []byte("\n")), out.String())
	var res pagesResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	require.Equal(t, 300, res.Tasks)
	require.NotNil(t, res.Over100ms)
	for _, path := range []string{"/dashboard", "/tasks", "/approvals", "/pipelines", "/webhooks", "/api/v1/tasks", "/api/v1/pipelines"} {
		require.Contains(t, res.Routes, path)
		require.Equal(t, 200, res.Routes[path].Status, path)
		require.Positive(t, res.Routes[path].Max, path)
	}
}
