package store_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// TestEventBatches: a write's events are stored as one row, and every reader
// (EventsAfter, the outbox, the task_events view) sees them one by one, with
// their seqs, text and data exactly as written, from any point inside a
// batch.
func TestEventBatches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "batches@acme.test", "acme", auth.RoleDeployer)
	_, err := st.OutboxRead(ctx, "batches", nil, 10) // the cursor starts before the task
	require.NoError(t, err)
	tk := testfactory.Task(t, st, u, nil)
	claimed, err := st.TaskClaim(ctx, "w1", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, tk.ID, claimed[0].Task.ID)

	odd := "quote \" backslash \\ newline \n tab \t bell \a nul \x00 bad \xff utf8 é ✓ 🚀 end"
	written := []task.Event{
		{Type: task.EventStepStarted, Status: task.StatusToolCall, Step: 1, TotalStep: 2, StepName: "one", Tool: "noop", Message: odd},
		{Type: task.EventStepLog, Status: task.StatusLog, Message: ""},
		{Type: task.EventStepLog, Status: task.StatusLog, Data: json.RawMessage(`{"a":null,"b":[1,"x"],"c":{"d":null}}`)},
		{Type: task.EventStepCompleted, Status: task.StatusToolResult, Step: 1, TotalStep: 2, StepName: "one"},
		{Type: task.EventStepLog, Status: task.StatusLog, Message: strings.Repeat("long ", 1000)},
	}
	require.NoError(t, st.EventAppend(ctx, tk.ID, claimed[0].Task.LeaseToken, written))

	var batches, rows int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM task_event_batches WHERE task_id = $1`, tk.ID).Scan(&batches))
	require.Equal(t, 2, batches, "submit and the write: one row each (the claim writes none)")

	all, err := st.EventsAfter(ctx, tk.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, all, 6)
	for i, e := range all {
		require.Equal(t, i+1, e.Seq)
		require.Equal(t, tk.ID, e.TaskID)
		require.False(t, e.Time.IsZero())
		require.True(t, json.Valid(e.Data), "seq %d data %s", e.Seq, e.Data)
	}
	want := strings.NewReplacer("\x00", "\uFFFD", "\xff", "\uFFFD").Replace(odd)
	require.Equal(t, want, all[1].Message, "text survives; NUL and invalid UTF-8 become U+FFFD")
	require.Equal(t, "one", all[1].StepName)
	require.Equal(t, "noop", all[1].Tool)
	require.Equal(t, 1, all[1].Step)
	require.Equal(t, 2, all[1].TotalStep)
	require.JSONEq(t, `{}`, string(all[2].Data))
	require.JSONEq(t, `{"a":null,"b":[1,"x"],"c":{"d":null}}`, string(all[3].Data))
	require.Equal(t, task.EventStepCompleted, all[4].Type)

	mid, err := st.EventsAfter(ctx, tk.ID, 4, 2)
	require.NoError(t, err)
	require.Equal(t, []int{5, 6}, seqs(mid), "after_seq inside a batch, with a limit")

	// The view shows the same events.
	vr, err := st.Pool().Query(ctx, `SELECT seq, type, message, step, step_name, data FROM task_events WHERE task_id = $1 ORDER BY seq`, tk.ID)
	require.NoError(t, err)
	for vr.Next() {
		var seq, step int
		var typ, msg, name string
		var data []byte
		require.NoError(t, vr.Scan(&seq, &typ, &msg, &step, &name, &data))
		e := all[rows]
		require.Equal(t, e.Seq, seq)
		require.Equal(t, string(e.Type), typ)
		require.Equal(t, e.Message, msg)
		require.Equal(t, e.Step, step)
		require.Equal(t, e.StepName, name)
		require.JSONEq(t, string(e.Data), string(data))
		rows++
	}
	require.NoError(t, vr.Err())
	require.Equal(t, 6, rows)

	// The outbox, two events at a time: its cursor stops inside batches.
	var got []string
	require.Eventually(t, func() bool {
		b, err := st.OutboxRead(ctx, "batches", nil, 2)
		require.NoError(t, err)
		require.LessOrEqual(t, b.Scanned, 2)
		for _, e := range b.Events {
			if e.TaskID == tk.ID {
				got = append(got, fmt.Sprint(e.Seq))
			}
		}
		if b.Scanned > 0 {
			require.NoError(t, st.OutboxAdvance(ctx, "batches", b.Next))
		}
		return len(got) >= 6
	}, 20*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"1", "2", "3", "4", "5", "6"}, got, "each event once, in order")
}

func seqs(events []task.Event) []int {
	out := make([]int, len(events))
	for i, e := range events {
		out[i] = e.Seq
	}
	return out
}

// TestTaskDeleteTakesItsRows: without foreign keys from the event batches
// and steps to tasks, deleting a team's tasks still deletes their rows.
func TestTaskDeleteTakesItsRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "gone@acme.test", "gone", auth.RoleDeployer)
	keep := testfactory.User(t, st, "kept@other.test", "other", auth.RoleDeployer)
	tk := testfactory.Task(t, st, u, nil)
	kept := testfactory.Task(t, st, keep, nil)
	for range 2 {
		claimed, err := st.TaskClaim(ctx, "w1", 1, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		written, err := st.TaskWrites(ctx, []store.TaskWrite{{ID: claimed[0].Task.ID, Token: claimed[0].Task.LeaseToken,
			Steps:  []store.StepSave{{Idx: 1, Name: "one", State: "completed"}},
			Events: []task.Event{{Type: task.EventStepCompleted, Status: task.StatusToolResult, Step: 1, TotalStep: 1}}}})
		require.NoError(t, err)
		require.Len(t, written, 1)
	}
	count := func(id string) (events, steps int) {
		require.NoError(t, st.Pool().QueryRow(ctx, `SELECT
			(SELECT count(*) FROM task_event_batches WHERE task_id = $1),
			(SELECT count(*) FROM task_steps WHERE task_id = $1)`, id).Scan(&events, &steps))
		return events, steps
	}
	ev, steps := count(tk.ID)
	require.Equal(t, 2, ev, "the submit's and the write's (the claim writes none)")
	require.Equal(t, 1, steps)

	_, err := st.Pool().Exec(ctx, `DELETE FROM teams WHERE name = 'gone'`)
	require.NoError(t, err)
	ev, steps = count(tk.ID)
	require.Zero(t, ev)
	require.Zero(t, steps)
	ev, steps = count(kept.ID)
	require.Equal(t, 2, ev, "another team's rows stay")
	require.Equal(t, 1, steps)
}

// The SQL side of the event codec (flightdeck_event, which a submit, a
// claim and a rescue write with) makes the object the Go encoder makes for
// an event with a message and data, as those always have.
func TestSQLEventMatchesGoEncoder(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	for _, e := range []task.Event{
		{Type: task.EventTaskState, Status: task.StatusLog, Message: "Picked up by a worker", Data: json.RawMessage(`{"state":"running","attempt":1,"worker":"w"}`)},
		{Type: task.EventTaskCancelled, Status: task.StatusCancelled, Message: "Task cancelled: \"quoted\"\nü", Data: json.RawMessage(`{"state":"cancelled","error":null}`)},
	} {
		var same bool
		var got string
		err := st.Pool().QueryRow(t.Context(), `
			SELECT flightdeck_event($1, $2, $3, $4::jsonb) = ($5::jsonb)->0, flightdeck_event($1, $2, $3, $4::jsonb)::text`,
			string(e.Type), string(e.Status), e.Message, string(e.Data), string(store.EncodeEvents([]task.Event{e}))).Scan(&same, &got)
		require.NoError(t, err)
		require.True(t, same, "SQL built %s for %+v", got, e)
	}
}
