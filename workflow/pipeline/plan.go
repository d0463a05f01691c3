package pipeline

import (
	"fmt"
	"regexp"
)

// PlannedStep is one leaf step of a task's plan, numbered in file order.
type PlannedStep struct {
	Index int // 1-based
	Name  string
	Step  Step
	Item  any // the for_each item, nil otherwise
}

// Stage is what runs at one point of the pipeline: a single step, or a
// group whose steps run at once and join.
type Stage struct {
	Steps       []PlannedStep
	Group       bool
	Join        string // all | any | quorum
	Quorum      int
	Timeout     int64 // nanoseconds; 0 none
	Concurrency int   // 0: all at once
}

var itemsRef = regexp.MustCompile(`^\{\{\s*\.params\.([a-z][a-z0-9_]*)\s*\}\}$`)

// Plan expands the pipeline for validated params: for_each branches become
// one step per item, named "step[item]". The plan is deterministic, so a
// resumed task rebuilds the same numbering.
func (p *Pipeline) Plan(params map[string]any) ([]Stage, int, error) {
	var stages []Stage
	idx := 0
	next := func(s Step, name string, item any) PlannedStep {
		idx++
		return PlannedStep{Index: idx, Name: name, Step: s, Item: item}
	}
	for _, s := range p.Steps {
		switch {
		case s.Parallel != nil:
			st := Stage{Group: true, Join: s.Parallel.Join, Quorum: s.Parallel.Quorum, Timeout: int64(s.Parallel.Timeout)}
			for _, g := range s.Parallel.Steps {
				st.Steps = append(st.Steps, next(g, g.Name, nil))
			}
			stages = append(stages, st)
		case s.ForEach != nil:
			m := itemsRef.FindStringSubmatch(s.ForEach.Items)
			if m == nil {
				return nil, 0, fmt.Errorf("for_each items %q must name a list parameter", s.ForEach.Items)
			}
			items, _ := params[m[1]].([]string)
			st := Stage{Group: true, Join: s.ForEach.Join, Quorum: s.ForEach.Quorum, Timeout: int64(s.ForEach.Timeout), Concurrency: s.ForEach.Concurrency}
			for _, it := range items {
				st.Steps = append(st.Steps, next(s.ForEach.Step, fmt.Sprintf("%s[%s]", s.ForEach.Step.Name, it), it))
			}
			if len(st.Steps) > 0 {
				stages = append(stages, st)
			}
		default:
			stages = append(stages, Stage{Steps: []PlannedStep{next(s, s.Name, nil)}, Join: "all"})
		}
	}
	for i := range stages {
		if stages[i].Join == "" {
			stages[i].Join = "all"
		}
	}
	return stages, idx, nil
}
