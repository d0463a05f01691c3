package pages

import (
	"fmt"
	"net/url"
	"time"

	"github.com/a-h/templ"
)

const (
	chartStep   = 10 // width of one bar, gap included
	chartHeight = 100
)

// chart is a bar chart of tasks that ended per period (a minute, a day).
type chart struct {
	TestID, Label string
	Bars          []column
	Peak          int // the busiest bar's total: the top of the y axis
}

// column is one period: its counts, what it is called in tooltips, its
// x-axis label ("" for none) and the finished_after/before window of its
// tasks.
type column struct {
	Label, Tick                  string
	From, To                     time.Time
	Completed, Failed, Cancelled int
}

// chartSegment is one outcome's part of a bar.
type chartSegment struct {
	Class, Word string
	Count, Y, H int
	Href        templ.SafeURL
}

func newChart(testID, what string, bars []column) chart {
	c := chart{TestID: testID, Bars: bars}
	ok, bad, cancelled := 0, 0, 0
	for _, b := range bars {
		c.Peak = max(c.Peak, b.Completed+b.Failed+b.Cancelled)
		ok, bad, cancelled = ok+b.Completed, bad+b.Failed, cancelled+b.Cancelled
	}
	c.Label = fmt.Sprintf("Tasks ended %s: %d completed, %d failed, %d cancelled", what, ok, bad, cancelled)
	return c
}

// height scales n to the chart: the busiest bar fills it, and any non-zero
// count stays visible.
func (c chart) height(n int) int {
	if n == 0 {
		return 0
	}
	return max(1, n*(chartHeight-4)/max(1, c.Peak))
}

// segments stacks b's outcomes from the bottom, each linking to its tasks.
func (c chart) segments(b column) []chartSegment {
	var out []chartSegment
	y := chartHeight
	for _, s := range []struct {
		class, word, state string
		n                  int
	}{{"bar-ok", "completed", "completed", b.Completed}, {"bar-bad", "failed", "failed", b.Failed}, {"bar-cancel", "cancelled", "cancelled", b.Cancelled}} {
		if s.n == 0 {
			continue
		}
		h := c.height(s.n)
		y -= h
		out = append(out, chartSegment{Class: s.class, Word: s.word, Count: s.n, Y: y, H: h,
			Href: tasksURL("state", s.state, "finished_after", rfc3339(b.From), "finished_before", rfc3339(b.To))})
	}
	return out
}

// minuteChart labels every tenth minute, counted back from the last.
func minuteChart(bars []MinuteBar) chart {
	out := make([]column, len(bars))
	for i, m := range bars {
		out[i] = column{Label: m.Minute.Format("15:04") + " UTC", From: m.Minute, To: m.Minute.Add(time.Minute),
			Completed: m.Completed, Failed: m.Failed, Cancelled: m.Cancelled}
		if (len(bars)-1-i)%10 == 0 {
			out[i].Tick = m.Minute.Format("15:04")
		}
	}
	return newChart("throughput-chart", "per minute over the last hour", out)
}

// dayChart labels every fifth day, counted back from today.
func dayChart(days []DayBar) chart {
	out := make([]column, len(days))
	for i, d := range days {
		out[i] = column{Label: d.Day.Format("Mon Jan 2"), From: d.Day, To: d.Day.AddDate(0, 0, 1),
			Completed: d.Completed, Failed: d.Failed, Cancelled: d.Cancelled}
		if (len(days)-1-i)%5 == 0 {
			out[i].Tick = d.Day.Format("Jan 2")
		}
	}
	return newChart("daily-chart", "per day", out)
}

// tasksURL links to the task list filtered by the key/value pairs kv.
func tasksURL(kv ...string) templ.SafeURL {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return templ.SafeURL("/tasks?" + v.Encode())
}

// pipelineURL is tasksURL for one pipeline's tasks ("": agent tasks).
func pipelineURL(pipeline string, kv ...string) templ.SafeURL {
	if pipeline == "" {
		return tasksURL(append([]string{"kind", "agent"}, kv...)...)
	}
	return tasksURL(append([]string{"pipeline", pipeline}, kv...)...)
}

func pipelineName(p string) string {
	if p == "" {
		return "agent"
	}
	return p
}

func perDay(n, days int) string {
	if days <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", float64(n)/float64(days))
}
