package components

import (
	"fmt"
	"strconv"
	"time"
)

// LogLine is one line of a step's output; Seq is its event's.
type LogLine struct {
	Seq  int
	Text string
}

// StepView is one step, or one step's undo, as the run page shows it.
type StepView struct {
	Index int
	Name  string
	// Lane is "step" (the forward run), "comp" (its undo) or "fail" (the
	// failing step's output, shown on failure); element ids start with it.
	Lane  string
	State string // as stored
	// Display is what its badge says and Key its class: the state, or
	// "waiting for approval", "retrying in 4 s (attempt 2 of 4)".
	Display, Key string
	// RetryAt is when a retrying step's next attempt starts (pages tick down to it).
	RetryAt               *time.Time
	RetryNote             string // " (attempt 2 of 4)"
	Attempt, MaxAttempts  int
	StartedAt, FinishedAt *time.Time
	Error                 string
	Log                   []LogLine
	Earlier               int // lines before Log, only in the artifact
	ArtifactID            string
	Open                  bool // shown expanded at first
}

// ID is the element id of the step's item; its parts add -head, -log, -foot.
func (s StepView) ID() string { return s.Lane + "-" + strconv.Itoa(s.Index) }

// StageView is one stage of a run: a single step, or a parallel group or
// for_each split with its join rule.
type StageView struct {
	Group bool
	Label string // "parallel", "for_each deploy_region"
	Join  string // "join all", "join quorum:2"
	Steps []StepView
}

// GanttView is a small timeline of a run's steps and undos.
type GanttView struct {
	Span string // the run's length so far
	Rows []GanttRow
}

// GanttRow is one bar: where it starts and how long it is, in percent of the span.
type GanttRow struct {
	Label, Lane, Key, Title string
	Left, Width             float64
}

func (r GanttRow) style() string { return fmt.Sprintf("left: %.2f%%; width: %.2f%%", r.Left, r.Width) }

// Duration says a span of time briefly; static/js/app.js writes ticking
// ones the same way.
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d m %02d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %02d m", int(d.Hours()), int(d.Minutes())%60)
}

func stamp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") // what Date.parse reads
}
