package saga

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"flightdeck/internal/words"
	"flightdeck/store"
	"flightdeck/workflow/environment"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// Decision is one decision a deploy needs from people (or a wait it
// sits out), as its run page lists them from the start (contract §9):
// what is decided, who may decide it, and where it stands.
type Decision struct {
	What  string
	Who   string
	State string // pending, approved, rejected, expired, cancelled; "ahead" when not asked yet; "covered" when another decides it
}

// Decisions lists every decision the deploy t of p will need, in the
// order the run meets them: its environment's reviewers, its wait timer,
// and each step approval that will ask (its `when` holding for the task's
// params), saying which of those the reviewers decide. aps are the task's
// approvals so far. A task of no pipeline, or one whose params no longer
// plan, needs none that can be told.
func Decisions(p *pipeline.Pipeline, rules *environment.Rules, t *task.Task, aps []store.Approval) []Decision {
	if p == nil || t.Kind != task.KindDeploy {
		return nil
	}
	var params map[string]any
	if json.Unmarshal(t.Params, &params) != nil {
		return nil
	}
	var out []Decision
	var covers []store.CoveredStep
	creator := "not " + cmpOr(t.CreatedBy, "its creator") + " (four eyes)"
	for _, a := range aps {
		if a.Kind != string(task.ApprovalEnvironment) {
			continue
		}
		var detail struct {
			Covers []store.CoveredStep `json:"covers"`
		}
		_ = json.Unmarshal(a.Detail, &detail)
		covers = detail.Covers
		state := string(a.State)
		if a.State == task.ApprovalPending {
			state = fmt.Sprintf("pending (%d of %d)", len(a.Decisions), a.Required)
		}
		out = append(out, Decision{What: fmt.Sprintf("%s of %s approve the deploy", words.Count(int64(a.Required), "reviewer"), a.Step),
			Who: "people with the role " + strings.Join(a.Roles, " or ") + ", " + creator, State: state})
	}
	if e := rules.Get(t.Environment); e != nil && e.Wait > 0 {
		state := "ahead"
		if t.State == task.StateScheduled || t.StartedAt != nil {
			state = "running out"
			if t.StartedAt != nil {
				state = "done"
			}
		}
		out = append(out, Decision{What: "a wait of " + words.Duration(e.Wait) + " after the reviewers",
			Who: "nobody: it runs out by itself", State: state})
	}
	stages, _, err := p.Plan(params)
	if err != nil {
		return out
	}
	for _, st := range stages {
		for _, ps := range st.Steps {
			ap := ps.Step.Approval
			if ap == nil {
				continue
			}
			if ap.When != "" {
				v, err := renderString(ap.When, templateData(t.ID, t.Team, params, ps))
				if err != nil || strings.TrimSpace(v) != "true" {
					continue
				}
			}
			roles := ap.Roles
			if len(roles) == 0 {
				roles = pipeline.ApprovalRolesDefault
			}
			d := Decision{What: "the approval of step " + ps.Name, State: "ahead",
				Who: "people with the role " + strings.Join(roles, " or ") + ", " + creator}
			if slices.ContainsFunc(covers, func(c store.CoveredStep) bool { return c.Idx == ps.Index }) {
				d.Who, d.State = "decided by the reviewers' approval", "covered"
			}
			for _, a := range aps {
				if a.Kind == string(task.ApprovalStep) && a.StepIdx == ps.Index {
					d.State = string(a.State) // the newest is last
				}
			}
			out = append(out, d)
		}
	}
	return out
}
