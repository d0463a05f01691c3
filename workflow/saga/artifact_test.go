package saga_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// brokenSink takes an artifact's bytes and then fails to store them, as a
// database that refuses the artifact's row does.
type brokenSink struct{}

func (brokenSink) Create(context.Context, string, string, int, string, []string) (saga.ArtifactWriter, error) {
	return brokenWriter{}, nil
}

type brokenWriter struct{}

func (brokenWriter) Write(p []byte) (int, error) { return len(p), nil }
func (brokenWriter) Close() (string, error)      { return "", errors.New("artifact store refused it") }

// An output that could not be kept is never silent: a step.log event with
// status error says so, and so does the step's output. Before, the
// runner dropped Close's error and the task completed as if all was kept.
func TestAnArtifactNotKeptIsSaidSo(t *testing.T) {
	t.Parallel()
	b := setupConfig(t, nil, func(c *saga.Config) { c.Artifacts = brokenSink{} },
		&pipeline.Pipeline{Name: "one", Steps: []pipeline.Step{step("a")}})
	tk := b.submit(t, "one")
	b.wait(t, tk.ID, task.StateCompleted)

	var said bool
	for _, e := range b.seqsGapFree(t, tk.ID) {
		if e.Type == task.EventStepLog && e.Status == task.StatusError {
			require.Contains(t, e.Message, "Output could not be kept as a.log: artifact store refused it")
			said = true
		}
	}
	require.True(t, said, "no event says the output was not kept")
	rows, err := b.st.StepList(t.Context(), tk.ID)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(rows[0].Output, &out))
	require.Equal(t, "do:a", out["did"], "the action's own output is kept")
	require.Equal(t, "output not kept as a.log: artifact store refused it", out["artifact_error"])
}
