package store

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/task"
)

// The stored form is the contract's event JSON, keyed, with zero fields
// left out, and reads back to the same events.
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
	raw := encodeEvents(events)
	require.Equal(t, `[{"type":"task.state","status":"log","message":"Task submitted","data":{"state":"pending"}},`+
		`{"type":"step.started","status":"tool_call","message":"Step 1/2 build started","data":{"attempt":1},"step":1,"total_step":2,"step_name":"build","tool":"exec"},`+
		`{"type":"step.log","status":"log","message":"a \"quoted\" line\tü\ufffd","step":1,"total_step":2,"step_name":"build"},`+
		`{"type":"step.completed","status":"tool_result","step":2},`+
		`{"type":"task.state","status":"log"}]`, string(raw))
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

	for _, bad := range []string{`{}`, `[["a","b"]]`, `[{"type":3}]`, `[{"step":"x"}]`, `[`} {
		_, err := decodeEvents("t1", 1, at, []byte(bad))
		require.Error(t, err, bad)
	}
}

// TestStoredEventKeepsItsOwnTime: a log line stamped where it was read
// keeps that time (lines 100 ms apart do not all read the flush's time);
// an event without one takes the batch's.
func TestStoredEventKeepsItsOwnTime(t *testing.T) {
	at := time.Date(2026, 11, 23, 12, 0, 1, 0, time.UTC)
	read := []time.Time{at.Add(-300 * time.Millisecond), at.Add(-200 * time.Millisecond), at.Add(-100 * time.Millisecond)}
	var events []task.Event
	for i, r := range read {
		events = append(events, task.Event{Type: task.EventStepLog, Status: task.StatusLog, Step: 1, Message: fmt.Sprint("line ", i), Time: r})
	}
	events = append(events, task.Event{Type: task.EventStepCompleted, Status: task.StatusToolResult, Step: 1})
	raw := encodeEvents(events)
	require.Contains(t, string(raw), `"time":"2026-11-23T12:00:00.7Z"`)
	got, err := decodeEvents("t1", 1, at, raw)
	require.NoError(t, err)
	for i, r := range read {
		require.True(t, r.Equal(got[i].Time), "line %d read at %v, stored %v", i, r, got[i].Time)
	}
	require.Equal(t, at, got[3].Time)
}
