package components

import (
	"fmt"
	"strconv"
	"strings"
)

// AnalysisView is an analysis step's measurements against its threshold
// (contract §11), as its step.log lines told them.
type AnalysisView struct {
	Metric    string
	Success   string // "<= 0.05"
	Threshold float64
	Count     int // measurements the step takes
	Points    []AnalysisPoint
}

// AnalysisPoint is one measurement; Value is nil when none could be taken
// (a failed query, too few requests).
type AnalysisPoint struct {
	N      int
	Value  *float64
	Text   string // the value as logged, or "none"
	OK     bool
	Reason string
}

// chart geometry, in the SVG's own units (it scales to its box)
const (
	chartW, chartH        = 320.0, 132.0
	chartLeft, chartRight = 8.0, 8.0
	chartTop, chartBase   = 18.0, 108.0
)

// chartBar is one measurement placed on the chart.
type chartBar struct {
	X, Y, W, H float64 // the bar
	CX         float64 // its centre
	LabelY     float64
	P          AnalysisPoint
}

func (a *AnalysisView) top() float64 {
	top := a.Threshold
	for _, p := range a.Points {
		if p.Value != nil && *p.Value > top {
			top = *p.Value
		}
	}
	if top <= 0 {
		return 1
	}
	return top * 1.25
}

func (a *AnalysisView) y(v float64) float64 {
	if v < 0 {
		v = 0
	}
	return chartBase - (chartBase-chartTop)*v/a.top()
}

func (a *AnalysisView) bars() []chartBar {
	slots := max(a.Count, len(a.Points), 1)
	slot := (chartW - chartLeft - chartRight) / float64(slots)
	w := min(slot*0.6, 48)
	out := make([]chartBar, 0, len(a.Points))
	for i, p := range a.Points {
		cx := chartLeft + slot*(float64(i)+0.5)
		b := chartBar{X: cx - w/2, W: w, CX: cx, P: p, Y: chartBase, LabelY: chartBase - 4}
		if p.Value != nil {
			b.Y = a.y(*p.Value)
			b.H = max(chartBase-b.Y, 1.5) // a zero still shows as a sliver
			b.Y = chartBase - b.H
			b.LabelY = b.Y - 4
		}
		out = append(out, b)
	}
	return out
}

// Label says the chart in words, for screen readers.
func (a *AnalysisView) Label() string {
	parts := make([]string, 0, len(a.Points))
	for _, p := range a.Points {
		s := fmt.Sprintf("%d: %s", p.N, p.Text)
		if !p.OK {
			s += " (failed)"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%s per measurement against %s: %s", a.Metric, a.Success, strings.Join(parts, ", "))
}

// Summary is the line under the chart: how many measurements passed.
func (a *AnalysisView) Summary() string {
	failed := 0
	for _, p := range a.Points {
		if !p.OK {
			failed++
		}
	}
	s := fmt.Sprintf("%d of %d measurements taken, %d failed; wants %s %s", len(a.Points), a.Count, failed, a.Metric, a.Success)
	return s
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
