package pages

// OverviewProps are the inputs of Overview: every target × environment of
// the viewer's teams, environments in promotion order.
type OverviewProps struct {
	Envs      []string // the columns, in promotion order
	Rows      []OverviewRow
	CSRFToken string
	Filter    string // the pipeline shown ("" for every one)
	Names     []string
}

// OverviewRow is one target (its params but the environment) of a pipeline.
type OverviewRow struct {
	Team, Pipeline string
	Target         string // "app=shop"
	Cells          []OverviewCell
}

// OverviewCell is one environment of a target.
type OverviewCell struct {
	Env     string
	Deploy  *EnvTarget // nil: nothing was deployed there
	Running string     // the task running there, "" for none
	Waiting int
	Frozen  *EnvFreeze
	// Readiness says whether the version to the left may be promoted here
	// now: Ready (ready, current, soaking, frozen, missing; "" when no
	// environment promotes here) and its words.
	Ready     string
	ReadyText string
	// Promote is the promotion of the source's version here, nil when the
	// viewer may not promote or nothing is there to promote.
	Promote *EnvPromotion
}
