package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/task"
)

// The stored form is positional, with trailing zero fields left out, and
// reads back to the same events.
func TestStoredEventForm(t *testing.T) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	events := []task.Event{
		{Type: task.EventTaskState, Status: task.StatusLog, Message: "Task submitted", Data: json.RawMessage(`{"state":"pending"}`)},
		{Type: task.EventStepStarted, Status: task.StatusToolCall, Step: 1, TotalStep: 2, StepName: "build", Tool: "exec",
			Message: "Step 1/2 build started", Data: json.RawMessage(`{"attempt":1}`)},
		{Type: task.EventStepLog, Status: task.StatusLog, Step: 1, TotalStep: 2, StepName: "build", Message: "a \"quoted\" line\tü\x00"},
		{Type: task.EventStepCompleted, Status: task.StatusToolResult, Step: 2},
		{Type: task.EventTaskState, Status: task.StatusLog, Data: json.RawMessage(`null`)},
	}
	raw := eventsJSON(events)
	require.Equal(t, `[["task.state","log","Task submitted",{"state":"pending"}],`+
		`["step.started","tool_call","Step 1/2 build started",{"attempt":1},1,2,"build","exec"],`+
		`["step.log","log","a \"quoted\" line\tü\ufffd",{},1,2,"build"],`+
		`["step.completed","tool_result","",{},2],`+
		`["task.state","log",""]]`, string(raw))
	require.True(t, json.Valid(raw))

	got, err := decodeEvents("t1", 7, at, raw)
	require.NoError(t, err)
	require.Len(t, got, len(events))
	for i, e := range events {
		e.TaskID, e.Seq, e.Time = "t1", 7+i, at
		if emptyData(e.Data) {
			e.Data = json.RawMessage(`{}`)
		}
		if i == 2 {
			e.Message = "a \"quoted\" line\tü\uFFFD"
		}
		require.Equal(t, e, got[i], "event %d", i)
	}

	for _, bad := range []string{`{}`, `[{"type":"x"}]`, `[["a","b"]]`, `[["a","b","c",{},1,2,"s","t","extra"]]`, `[["a","b",3]]`, `[`} {
		_, err := decodeEvents("t1", 1, at, []byte(bad))
		require.Error(t, err, bad)
	}
}
