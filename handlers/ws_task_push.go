package handlers

import (
	"bytes"
	"cmp"
	"context"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"flightdeck/views/components"
	"flightdeck/views/pages"
	"flightdeck/workflow/task"
)

// taskPush remembers what the run page's socket has sent, so each push
// carries only what changed: sections whose HTML changed (swapped whole),
// step heads, and the log lines and events since the last push (appended),
// which leaves a reader's scroll position and selection alone.
type taskPush struct {
	model *runModel
	sent  map[string]uint64 // element id → hash of the HTML last sent for it
	seq   int               // log lines and events up to this seq are on the page
}

// newTaskPush starts from what the page says it shows (after its seq, with
// these steps and compensation lists, as the page's script asks on
// connecting); a client that says nothing gets every section whole.
func newTaskPush(c echo.Context) *taskPush {
	return newTaskPushAfter(c.QueryParam("after_seq"), c.QueryParam("steps"), c.QueryParam("undo"), c.QueryParam("sigs"))
}

func newTaskPushAfter(after, steps, undo, sigs string) *taskPush {
	tp := &taskPush{model: newRunModel(), sent: map[string]uint64{}, seq: -1}
	n, err := strconv.Atoi(after)
	if err != nil || n < 0 {
		return tp
	}
	tp.seq = n
	tp.sent["task-steps"] = sigHash(steps)
	tp.sent["task-compensation"] = sigHash(undo)
	tp.sent["task-events"] = sigHash("")
	// the sections as the page shows them: only those that differ go out
	for _, kv := range strings.Split(sigs, ",") {
		id, hx, _ := strings.Cut(kv, "=")
		if h, err := strconv.ParseUint(hx, 16, 64); err == nil && slices.ContainsFunc(taskSectionIDs, func(s string) bool { return s == id }) {
			tp.sent[id] = h
		}
	}
	return tp
}

// taskSectionIDs are the run page's sections a push swaps whole, in the
// order taskSections gives them.
var taskSectionIDs = []string{"task-header", "task-control", "task-approvals", "task-agent", "task-failure", "task-gantt", "task-artifacts"}

// taskSections are those sections of p.
func taskSections(p pages.TaskShowProps) []templ.Component {
	return []templ.Component{pages.TaskHeader(p), pages.TaskControl(p), pages.TaskApprovals(p), pages.TaskAgent(p),
		pages.TaskFailure(p), pages.TaskGantt(p), pages.TaskArtifacts(p)}
}

// sectionHash is the hash of a section's HTML, as a push compares it.
func sectionHash(c templ.Component) uint64 {
	var b bytes.Buffer
	_ = c.Render(context.Background(), &b)
	h := fnv.New64a()
	_, _ = h.Write(b.Bytes())
	return h.Sum64()
}

// sectionSigs says the hash of every section of p ("id=hex,…"): the page
// gives them to its socket (RunSeq's data-sigs).
func sectionSigs(p pages.TaskShowProps) string {
	out := make([]string, len(taskSectionIDs))
	for i, c := range taskSections(p) {
		out[i] = taskSectionIDs[i] + "=" + strconv.FormatUint(sectionHash(c), 16)
	}
	return strings.Join(out, ",")
}

// sigs is sectionSigs of what the socket has sent.
func (tp *taskPush) sigs() string {
	var out []string
	for _, id := range taskSectionIDs {
		if h, ok := tp.sent[id]; ok {
			out = append(out, id+"="+strconv.FormatUint(h, 16))
		}
	}
	return strings.Join(out, ",")
}

func sigHash(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}

// frame renders the push for p (read through tp.model) and returns it,
// empty when nothing changed.
func (tp *taskPush) frame(p pages.TaskShowProps) []byte {
	var out bytes.Buffer
	for i, c := range taskSections(p) {
		tp.section(&out, taskSectionIDs[i], c)
	}

	// The lists: whole when their structure changed, else part by part.
	if tp.changed("task-steps", sigHash(p.StepsSig)) {
		_ = pages.TaskSteps(p).Render(context.Background(), &out)
	} else {
		for _, st := range p.Stages {
			for _, s := range st.Steps {
				tp.step(&out, s)
			}
		}
	}
	if tp.changed("task-compensation", sigHash(p.UndoSig)) {
		_ = pages.TaskUndo(p).Render(context.Background(), &out)
	} else {
		for _, s := range p.Undo {
			tp.step(&out, s)
		}
	}
	if tp.changed("task-events", sigHash("")) {
		_ = pages.TaskEvents(p).Render(context.Background(), &out)
	} else if evs := tp.newEvents(); len(evs) > 0 {
		_ = pages.EventsPrepend(eventViews(evs)).Render(context.Background(), &out)
	}
	if out.Len() > 0 || tp.seq != p.Seq {
		p.SectionSigs = tp.sigs() // a reconnect says what the page shows now
		_ = pages.RunSeq(p).Render(context.Background(), &out)
	}
	tp.seq = p.Seq
	return out.Bytes()
}

// changed records h as what id shows and reports whether it differs from
// what was sent.
func (tp *taskPush) changed(id string, h uint64) bool {
	prev, ok := tp.sent[id]
	tp.sent[id] = h
	return !ok || prev != h
}

// section adds c to out when its HTML changed since it was last sent.
func (tp *taskPush) section(out *bytes.Buffer, id string, c templ.Component) {
	var b bytes.Buffer
	_ = c.Render(context.Background(), &b)
	h := fnv.New64a()
	_, _ = h.Write(b.Bytes())
	if tp.changed(id, h.Sum64()) {
		out.Write(b.Bytes())
	}
}

// step adds a step's head and foot when they changed, and its new lines.
func (tp *taskPush) step(out *bytes.Buffer, s components.StepView) {
	tp.section(out, s.ID()+"-head", components.StepHead(s))
	tp.section(out, s.ID()+"-foot", components.StepFoot(s))
	tp.section(out, s.ID()+"-chart", components.AnalysisChart(s))
	i := len(s.Log)
	for i > 0 && s.Log[i-1].Seq > tp.seq {
		i--
	}
	if i < len(s.Log) {
		_ = components.LogAppend(s, s.Log[i:]).Render(context.Background(), out)
	}
}

// newEvents are the events since the last push, newest first.
func (tp *taskPush) newEvents() []task.Event {
	var out []task.Event
	for _, evs := range [][]task.Event{tp.model.events, tp.model.logs} {
		for i := len(evs) - 1; i >= 0 && evs[i].Seq > tp.seq; i-- {
			out = append(out, evs[i])
		}
	}
	slices.SortFunc(out, func(a, b task.Event) int { return cmp.Compare(b.Seq, a.Seq) })
	return out
}
