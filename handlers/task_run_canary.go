package handlers

import (
	"regexp"
	"strconv"

	"flightdeck/store"
	"flightdeck/views/components"
	"flightdeck/workflow/action/analysis"
	"flightdeck/workflow/action/local"
	"flightdeck/workflow/pipeline"
)

// The analysis action logs each measurement in one fixed form (contract
// §11): "measurement 2 of 3: error_rate 0.48, wants <= 0.05: failed (…)".
// The run page draws them from those lines, so a live page gets each one
// as it is taken, with no other event.
var measurementLine = regexp.MustCompile(`^measurement (\d+) of (\d+): (\S+) (\S+), wants (\S+ \S+): (ok|failed)(?: \((.*)\))?$`)

// analysisView reads an analysis step's measurements from its log; the
// last attempt's only (a retried or resumed analysis measures afresh).
func analysisView(ps pipeline.PlannedStep, lines []components.LogLine) *components.AnalysisView {
	if ps.Step.Action != "analysis" {
		return nil
	}
	var a *components.AnalysisView
	for _, l := range lines {
		m := measurementLine.FindStringSubmatch(l.Text)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		count, _ := strconv.Atoi(m[2])
		th, err := analysis.ParseThreshold(m[5])
		if err != nil {
			continue
		}
		if a == nil || n == 1 {
			a = &components.AnalysisView{Metric: m[3], Success: th.String(), Threshold: th.Value, Count: count}
		}
		p := components.AnalysisPoint{N: n, Text: m[4], OK: m[6] == "ok", Reason: m[7]}
		if v, err := strconv.ParseFloat(m[4], 64); err == nil {
			p.Value = &v
		}
		a.Points = append(a.Points, p)
	}
	return a
}

// The traffic shift's log says the share it set.
var shiftLine = regexp.MustCompile(`receives (\d+) % of the requests|(now serves every request)`)

// shiftShare is a traffic shift step's share ("20 %"): as its with says
// when that is a number, else as its log says once it ran.
func shiftShare(ps pipeline.PlannedStep, lines []components.LogLine) string {
	if ps.Step.Action != "local.traffic_shift" {
		return ""
	}
	if w, ok := local.Weight(ps.Step.With["weight"]); ok {
		return strconv.Itoa(w) + " %"
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if m := shiftLine.FindStringSubmatch(lines[i].Text); m != nil {
			if m[2] != "" {
				return "100 %"
			}
			return m[1] + " %"
		}
	}
	return ""
}

// canaryShares are the team's routes that have a canary, by host, in the
// words of the environments page ("2.0.0 at 20 %").
func canaryShares(cs []store.LocalCanary) map[string]store.LocalCanary {
	out := make(map[string]store.LocalCanary, len(cs))
	for _, c := range cs {
		out[c.Host] = c
	}
	return out
}
