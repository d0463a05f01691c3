package pages

import "time"

// EnvDeploy is one completed deploy of a target, as the page shows it.
type EnvDeploy struct {
	TaskID     string
	Version    string // the version param's value, or the non-target params
	By         string
	FinishedAt time.Time
	Ago        string // FinishedAt relative to the render ("5 min ago")
	Current    bool   // what the target runs now (no Redeploy)
}

// EnvTarget is one target of a pipeline: what runs there and what is on the way.
type EnvTarget struct {
	Team        string
	Target      string   // "app=shop env=staging"
	TargetPairs []string // "app=shop", "env=staging"
	Current     *EnvDeploy
	Previous    *EnvDeploy
	Running     string   // task id, "" for none
	Waiting     int      // tasks waiting for the target
	WaitingID   []string // the first few of them
	History     []EnvDeploy
	CanDeploy   bool // the viewer may redeploy and roll back (deployer or above)
	// Rollback: Previous is an older version than Current ("Roll back to");
	// otherwise its button redeploys it.
	Rollback bool
	Health   *EnvHealth // nil: the target has no local host
	AppURL   string     // where the deployed app answers; "" when nothing serves it
}

// EnvHealth is what a target's monitor last found.
type EnvHealth struct {
	State      string // healthy, unhealthy, pending (not checked yet), unmonitored
	Text       string // State in words
	Detail     string // the open alert's message
	CheckedAgo string // "checked 5 min ago", "" when never
}

// EnvPipeline is one pipeline's table of targets.
type EnvPipeline struct {
	Name         string
	VersionParam string // "" when the pipeline has none
	Targets      []EnvTarget
}

// EnvironmentsProps are the inputs of Environments.
type EnvironmentsProps struct {
	Pipelines []EnvPipeline
	Pipeline  string   // the filter, "" for every pipeline
	Names     []string // the filter's choices
	CSRFToken string
}
