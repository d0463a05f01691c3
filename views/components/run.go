package components

import (
	"fmt"
	"strconv"
	"time"
)

// LogLine is one line of a step's output: Seq is its event's, N its
// number in the step's log (from 1), Time when flightdeck got it.
type LogLine struct {
	Seq, N int
	Time   time.Time
	Text   string
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
	ErrorShown            bool // the task's error says it already: not repeated in the head
	Log                   []LogLine
	Earlier               int // lines before Log, only in the artifact
	ArtifactID            string
	Open                  bool // shown expanded at first
	// Analysis is an analysis step's measurements so far (nil for other
	// steps); Shift a traffic shift's share ("20 %"), contract §11.
	Analysis *AnalysisView
	Shift    string
}

// ID is the element id of the step's item; its parts add -head, -log, -foot.
func (s StepView) ID() string { return s.Lane + "-" + strconv.Itoa(s.Index) }

// LinePrefix is what the ids of the step's log lines start with, the
// link to line 42 being #<prefix>42: "step-NAME-L" for a step's own log,
// "undo-NAME-L" for its undo's. The failing step's output, repeated on
// failure, links to the step's own lines and has no ids of its own.
func (s StepView) LinePrefix() string {
	lane := s.Lane
	switch lane {
	case "comp":
		lane = "undo"
	case "fail":
		lane = "step"
	}
	return lane + "-" + anchorName(s.Name) + "-L"
}

// anchorName keeps a step's name readable in a link: letters, digits, _
// and - as they are, anything else (a for_each item's brackets) as -.
func anchorName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}

// StageView is one stage of a run: a single step, or a parallel group or
// for_each split with its join rule.
type StageView struct {
	Group bool
	Label string // "parallel", "for_each deploy_region"
	Join  string // "join all", "join quorum:2"
	Steps []StepView
}

// GanttView is a timeline of a run's steps, undos and approval waits on
// a time axis. Start and End (nil while the run goes on) are the run's;
// while it goes on, static/js/app.js lays the bars and ticks out again
// every second from the same times, so running bars grow.
type GanttView struct {
	Span       string // the run's length so far
	Start, End *time.Time
	Rows       []GanttRow
	Bands      []GanttBand
	Ticks      []GanttTick
	Legend     []LegendItem
}

// GanttRow is one bar: when it started and ended (nil: still going), and
// where that is, in percent of the span.
type GanttRow struct {
	Label, Lane, Key, Title string
	Note                    string // a traffic shift's share, beside its label
	Start, End              *time.Time
	Left, Width             float64
}

// GanttBand is a stretch the run waited for a person (an approval).
type GanttBand struct {
	Title       string
	Start, End  *time.Time
	Left, Width float64
}

// GanttTick is one mark of the time axis.
type GanttTick struct {
	Label string
	Left  float64
}

// LegendItem names one colour of the timeline.
type LegendItem struct{ Class, Label string }

func (r GanttRow) style() string  { return fmt.Sprintf("left: %.2f%%; width: %.2f%%", r.Left, r.Width) }
func (b GanttBand) style() string { return fmt.Sprintf("left: %.2f%%; width: %.2f%%", b.Left, b.Width) }
func (t GanttTick) style() string { return fmt.Sprintf("left: %.2f%%", t.Left) }

// tickSteps are the axis' steps, in seconds: the first that gives at most
// six marks is used. static/js/app.js (ganttTicks) uses the same.
var tickSteps = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400}

// Ticks marks a span of time from 0 every round step.
func Ticks(span time.Duration) []GanttTick {
	total := span.Seconds()
	if total <= 0 {
		return nil
	}
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if total/s <= 6 {
			step = s
			break
		}
	}
	var out []GanttTick
	for i := 0; float64(i)*step <= total+1e-9; i++ {
		at := float64(i) * step
		out = append(out, GanttTick{Label: TickLabel(at), Left: 100 * at / total})
	}
	return out
}

// TickLabel says a mark's time from the start: "0", "500 ms", "15 s",
// "2 m", "1 m 30 s", "1 h 30 m".
func TickLabel(sec float64) string {
	switch {
	case sec == 0:
		return "0"
	case sec < 1:
		return strconv.Itoa(int(sec*1000+0.5)) + " ms"
	case sec < 60:
		return strconv.Itoa(int(sec)) + " s"
	case sec < 3600:
		m, s := int(sec)/60, int(sec)%60
		if s == 0 {
			return strconv.Itoa(m) + " m"
		}
		return fmt.Sprintf("%d m %d s", m, s)
	}
	h, m := int(sec)/3600, int(sec)%3600/60
	if m == 0 {
		return strconv.Itoa(h) + " h"
	}
	return fmt.Sprintf("%d h %d m", h, m)
}

// Duration says a span of time briefly; static/js/app.js writes ticking
// ones the same way.
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds()) // a fast step's real length, not 0.0 s
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
