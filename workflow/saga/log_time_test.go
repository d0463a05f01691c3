package saga_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/action"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// TestLogLinesKeepTheTimeTheyWereRead: two lines 150 ms apart, written in
// one flush (the flush interval is far longer than the step), are stored
// 150 ms apart, not both at the flush's time.
func TestLogLinesKeepTheTimeTheyWereRead(t *testing.T) {
	t.Parallel()
	const gap = 150 * time.Millisecond
	slow := action.Func(func(ctx context.Context, in action.Input) (json.RawMessage, error) {
		in.Log("first")
		select { // a gap between two lines of output, not a synchronisation
		case <-time.After(gap):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		in.Log("second")
		return json.RawMessage(`{}`), nil
	})
	p := &pipeline.Pipeline{Name: "two-lines", Steps: []pipeline.Step{{Name: "talk", Action: "test.slow"}}}
	b := setupConfig(t, action.Registry{"test.slow": slow}, func(c *saga.Config) { c.FlushInterval = time.Hour }, p)
	tk := b.submit(t, p.Name)
	b.wait(t, tk.ID, task.StateCompleted)
	at := map[string]time.Time{}
	for _, e := range b.seqsGapFree(t, tk.ID) {
		if e.Type == task.EventStepLog {
			at[e.Message] = e.Time
		}
	}
	require.Contains(t, at, "first")
	require.Contains(t, at, "second")
	require.GreaterOrEqual(t, at["second"].Sub(at["first"]), gap, "first %v, second %v", at["first"], at["second"])
}
