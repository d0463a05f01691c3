package handlers

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/store"
	"flightdeck/views/components"
	"flightdeck/views/pages"
	"flightdeck/workflow/task"
)

func ev(seq int, typ task.EventType, status task.Status, step int, msg string, data string) task.Event {
	if data == "" {
		data = "{}"
	}
	return task.Event{Seq: seq, Type: typ, Status: status, Step: step, Message: msg, Data: json.RawMessage(data), Time: time.Unix(int64(seq), 0)}
}

// TestRunModelKeepsEachLogApart: a step's undo writes to a log of its own,
// so the failing step's output is its own, not a later compensation's.
func TestRunModelKeepsEachLogApart(t *testing.T) {
	t.Parallel()
	m := newRunModel()
	retry := `{"next_attempt_at":"2030-01-02T03:04:05.678Z","next_attempt":2,"max_attempts":4,"attempt":1}`
	events := []task.Event{
		ev(1, task.EventStepStarted, task.StatusToolCall, 1, "", ""),
		ev(2, task.EventStepLog, task.StatusLog, 1, "a: working", ""),
		ev(3, task.EventStepCompleted, task.StatusToolResult, 1, "", ""),
		ev(4, task.EventStepStarted, task.StatusToolCall, 2, "", ""),
		ev(5, task.EventStepLog, task.StatusLog, 2, "b: try 1", ""),
		ev(6, task.EventStepRetrying, task.StatusLog, 2, "", retry),
		ev(7, task.EventStepStarted, task.StatusToolCall, 2, "", ""),
		ev(8, task.EventStepLog, task.StatusLog, 2, "b: try 2 broke", ""),
		ev(9, task.EventStepFailed, task.StatusError, 2, "", ""),
		ev(10, task.EventStepCompensating, task.StatusCompensating, 1, "", ""),
		ev(11, task.EventStepLog, task.StatusLog, 1, "a: undoing", ""),
		ev(12, task.EventArtifactCreated, task.StatusLog, 1, "", `{"artifact_id":"art-undo","name":"a.compensate.log"}`),
		ev(13, task.EventStepCompensated, task.StatusCompensating, 1, "", ""),
	}
	m.fold(events[:6], 13)
	require.NotNil(t, m.track(2).fwd.retry, "between attempts the step waits for a retry")
	require.Equal(t, 2, m.track(2).fwd.retry.next)
	require.Equal(t, 4, m.track(2).fwd.retry.max)
	m.fold(events, 12) // the rest, but the task row says 12
	require.Equal(t, 12, m.seq)
	require.Nil(t, m.track(2).fwd.retry, "the next attempt started")
	require.Equal(t, 2, m.failed())
	lines := func(ls []components.LogLine) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Text)
		}
		return out
	}
	require.Equal(t, []string{"b: try 1", "b: try 2 broke"}, lines(m.track(2).fwd.lines))
	require.Equal(t, []string{"a: working"}, lines(m.track(1).fwd.lines))
	require.Equal(t, []string{"a: undoing"}, lines(m.track(1).comp.lines))
	require.Equal(t, "art-undo", m.track(1).comp.artifact)
	require.Nil(t, m.track(1).compEnd, "seq 13 is not folded yet")
	m.fold(events, 13)
	require.NotNil(t, m.track(1).compEnd)
	raw := m.rawEvents()
	require.Equal(t, 13, raw[0].Seq, "newest first")
}

// TestTaskPushAppends: a page that says how far it is gets the new log
// lines appended to its step's log and its head swapped, never the list
// whole; a push with nothing new sends nothing.
func TestTaskPushAppends(t *testing.T) {
	t.Parallel()
	step := components.StepView{Index: 1, Name: "build", Lane: "step", State: "running", Display: "running", Key: "running",
		Log: []components.LogLine{{Seq: 3, Text: "old line"}, {Seq: 5, Text: "new line"}}}
	p := pages.TaskShowProps{Task: pages.TaskView{ID: "t1", Kind: "deploy", State: "running"}, Seq: 5, StepsSig: "s1",
		Stages: []components.StageView{{Steps: []components.StepView{step}}}}
	tp := newTaskPushAfter("4", "s1", "", "")
	f := string(tp.frame(p))
	require.Contains(t, f, `hx-swap-oob="beforeend:#step-1-log"`)
	require.Contains(t, f, "new line")
	require.NotContains(t, f, "old line", "the page has it")
	require.NotContains(t, f, `id="task-steps"`, "the list is not replaced")
	require.NotContains(t, f, `id="task-events"`)
	require.Contains(t, f, `id="step-1-head"`)
	require.Empty(t, string(tp.frame(p)), "nothing changed")

	p.StepsSig = "s2" // the structure changed: the list comes whole
	p.Seq = 6
	f = string(tp.frame(p))
	require.Contains(t, f, `id="task-steps"`)
	require.Equal(t, 1, strings.Count(f, "old line"))

	whole := string(newTaskPushAfter("", "", "", "").frame(p))
	require.Contains(t, whole, `id="task-events"`, "a page that says nothing gets every section")
}

// TestTaskPushSkipsSectionsThePageShows: a page that says which sections
// it shows (their hashes, RunSeq's data-sigs) gets none of them again on
// its socket's first push, so a comment a person began to type in an
// approval card is not wiped; a section that changed since comes whole.
func TestTaskPushSkipsSectionsThePageShows(t *testing.T) {
	t.Parallel()
	p := pages.TaskShowProps{Task: pages.TaskView{ID: "t1", Kind: "deploy", State: "awaiting_approval"}, Seq: 5, StepsSig: "s1",
		Approvals: []pages.ApprovalView{{ID: "a1", Step: "production", State: "pending", Environment: true, Required: 2, CanDecide: true}}}
	sigs := sectionSigs(p)
	require.Contains(t, sigs, "task-approvals=")
	f := string(newTaskPushAfter("5", "s1", "", sigs).frame(p))
	require.NotContains(t, f, `id="task-approvals"`, "the page shows it already")
	require.NotContains(t, f, `id="task-header"`)
	all := string(newTaskPushAfter("5", "s1", "", "").frame(p))
	require.Contains(t, all, `id="task-approvals"`, "a page that says nothing gets the sections whole")

	p.Approvals[0].Decisions = []string{"ann approved"}
	f = string(newTaskPushAfter("5", "s1", "", sigs).frame(p))
	require.Contains(t, f, `id="task-approvals"`, "a changed section comes whole")
	require.Contains(t, f, `data-sigs="`, "and the page learns the new hashes for a reconnect")
}

// TestRunModelNumbersLines: a step's lines are numbered from 1 across its
// attempts, its undo's log from 1 on its own, and an undo starts when its
// worker said (data.started_at), not when its event was written.
func TestRunModelNumbersLines(t *testing.T) {
	t.Parallel()
	m := newRunModel()
	m.fold([]task.Event{
		ev(1, task.EventStepStarted, task.StatusToolCall, 1, "", ""),
		ev(2, task.EventStepLog, task.StatusLog, 1, "one", ""),
		ev(3, task.EventStepLog, task.StatusLog, 1, "two", ""),
		ev(4, task.EventStepStarted, task.StatusToolCall, 1, "", ""),
		ev(5, task.EventStepLog, task.StatusLog, 1, "three", ""),
		ev(6, task.EventStepCompensating, task.StatusCompensating, 1, "", `{"try":1,"started_at":"2030-01-02T03:04:05.5Z"}`),
		ev(7, task.EventStepLog, task.StatusLog, 1, "undo one", ""),
	}, 7)
	var ns []int
	for _, l := range m.track(1).fwd.lines {
		ns = append(ns, l.N)
	}
	require.Equal(t, []int{1, 2, 3}, ns)
	require.Equal(t, 1, m.track(1).comp.lines[0].N)
	require.Equal(t, time.Unix(5, 0), m.track(1).fwd.lines[2].Time)
	require.Equal(t, time.Date(2030, 1, 2, 3, 4, 5, 5e8, time.UTC), m.track(1).compStart.UTC())
}

// TestGanttAxisLegendBands: the timeline places bars by the steps' times,
// draws a step completed then undone and its undo in colours of their
// own, an approval wait as a band, marks an axis and names in its legend
// the colours it uses.
func TestGanttAxisLegendBands(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC)
	at := func(s float64) *time.Time { v := t0.Add(time.Duration(s * float64(time.Second))); return &v }
	tk := &task.Task{StartedAt: at(0), FinishedAt: at(20)}
	stages := []components.StageView{{Steps: []components.StepView{
		{Name: "dns", Lane: "step", State: "compensated", Key: "compensated", StartedAt: at(0), FinishedAt: at(2)},
		{Name: "deploy", Lane: "step", State: "failed", Key: "failed", StartedAt: at(12), FinishedAt: at(15)},
		{Name: "monitor", Lane: "step", State: "pending", Key: "pending"},
	}}}
	undo := []components.StepView{{Name: "dns", Lane: "comp", State: "compensated", Key: "compensated", StartedAt: at(15), FinishedAt: at(20)}}
	decided, by := at(12), "boss@acme.test"
	aps := []store.Approval{{Step: "deploy", State: task.ApprovalApproved, RequestedAt: *at(2), DecidedAt: decided, DecidedBy: &by, ExpiresAt: *at(3600)}}
	g := gantt(tk, stages, undo, aps, t0.Add(time.Hour))
	require.Len(t, g.Rows, 3, "a step that never started has no bar")
	require.Equal(t, "undone", g.Rows[0].Key)
	require.Equal(t, "failed", g.Rows[1].Key)
	require.InDelta(t, 60, g.Rows[1].Left, 1e-9)
	require.InDelta(t, 15, g.Rows[1].Width, 1e-9)
	require.Equal(t, "undo", g.Rows[2].Key)
	require.Len(t, g.Bands, 1)
	require.InDelta(t, 10, g.Bands[0].Left, 1e-9)
	require.InDelta(t, 50, g.Bands[0].Width, 1e-9)
	require.Contains(t, g.Bands[0].Title, "approved by boss@acme.test")
	var ticks, legend []string
	for _, tk := range g.Ticks {
		ticks = append(ticks, tk.Label)
	}
	for _, l := range g.Legend {
		legend = append(legend, l.Class)
	}
	require.Equal(t, []string{"0", "5 s", "10 s", "15 s", "20 s"}, ticks)
	require.Equal(t, []string{"failed", "undone", "undo", "approval"}, legend)

	// Still running: the run's end is open, for the page to tick.
	tk.FinishedAt = nil
	g = gantt(tk, stages, undo, nil, t0.Add(40*time.Second))
	require.Nil(t, g.End)
	require.Equal(t, "40 s", g.Span)
}
