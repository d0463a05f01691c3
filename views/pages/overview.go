package pages

import (
	"fmt"

	"github.com/a-h/templ"
)

// OverviewProps are the inputs of Overview: every target of the viewer's
// teams by pipeline, one column per environment in promotion order.
type OverviewProps struct {
	CSRFToken string
	Pipelines []OvPipeline
}

// OvPipeline is one pipeline's grid.
type OvPipeline struct {
	Name string
	Envs []string // in promotion order: promote_to chains, then the rest by name
	Rows []OvRow
}

// OvRow is one target (its params but the environment), a cell per Env.
type OvRow struct {
	Team   string
	Target string // "app=shop"
	Cells  []OvCell
}

// OvCell is what one environment of a target runs and may take.
type OvCell struct {
	Env     string
	Current *EnvDeploy // nil: nothing deployed there yet
	Health  *EnvHealth
	// Activity is what runs or waits there, in the order it will run.
	Activity []OvActivity
	Frozen   string // "frozen until …", "" when not frozen now
	Canary   string // "2.0.0 at 20 %", "" for none
	Promote  *OvPromote
}

// OvActivity is a task of the cell that has not ended.
type OvActivity struct {
	TaskID  string
	Version string
	State   string // in words: "running", "awaiting approval"
}

// OvPromote is whether the version to the cell's left may come in now.
type OvPromote struct {
	Pipeline, Team, From, To, Version string
	Target                            map[string]string // the target's params but the environment
	State                             string            // ready, soaking, frozen, not_in_source, refused, there
	Text                              string            // the state in words: "soaking until …"
	Why                               string            // what the submit would answer
	CanDeploy                         bool              // the viewer may submit in the team
}

// Ready says whether the Promote button may be pressed.
func (p *OvPromote) Ready() bool { return p.State == "ready" && p.CanDeploy }

// ovColumns sizes the grid: the target, then one column per environment.
func ovColumns(n int) templ.SafeCSS {
	return templ.SafeCSS(fmt.Sprintf("--ov-cols: %d", n))
}
