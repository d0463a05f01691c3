package pages

import "time"

// EnvDeploy is one completed deploy of a target, as the page shows it.
type EnvDeploy struct {
	TaskID     string
	Version    string // the version param's value, or the non-target params
	VersionURL string // where the version's source is (links.version), "" for nowhere
	By         string
	FinishedAt time.Time
	Ago        string // FinishedAt relative to the render ("5 min ago")
	Current    bool   // what the target runs now (no Redeploy)
	Skipped    int    // steps skipped on the way: "completed with 1 step skipped"
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
	CanDeploy   bool // the viewer may redeploy and roll back (task.ActSubmit)
	// Rollback: Previous is an older version than Current ("Roll back to");
	// otherwise its button redeploys it.
	Rollback bool
	Health   *EnvHealth // nil: the target has no local host
	// Canary: the local host whose canary share the page shows (polled
	// while a deploy runs), its version ("" for none) and share.
	CanaryHost    string
	CanaryVersion string
	CanaryWeight  int
	AppURL        string // where the deployed app answers; "" when nothing serves it
	// Environment is the target's environment ("" for none); Frozen the
	// freeze that holds it now (nil: none).
	Environment string
	Frozen      *EnvFreeze
	Promote     *EnvPromotion
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
	// Freezes are the active and upcoming freezes of the viewer's teams
	// and the recurring windows of the next days.
	Freezes   []EnvFreeze
	CanFreeze bool // the viewer is an admin of a team
	// KnownEnvironments are the environments a deploy can go to, offered
	// by the freeze form (a freeze of any other name is refused).
	KnownEnvironments []string
	Flash             string // a refusal to show (a promotion, a freeze)
}

// EnvFreeze is a freeze as the environments page lists it.
type EnvFreeze struct {
	ID          string // "" for a recurring window
	Environment string
	From, Until time.Time
	Reason      string
	Source      string // api | rule
	Active      bool   // holds now
	CanEnd      bool   // the viewer may end it now (an admin; API freezes only)
	TeamID      string // an API freeze's team ("" for a recurring window, every team's)
	// Recurring says a window of environments.yaml once ("nightly
	// 22:00–06:00, every day"); From and Until are then its occurrence
	// now or next. "" for a freeze made through the API.
	Recurring string
}

// ChangeRow is one param of a diff between two deploys.
type ChangeRow struct {
	Field    string
	From, To string
	Changed  bool
}

// EnvPromotion is a target's "Promote to …" offer.
type EnvPromotion struct {
	To       string
	Pipeline string
	From     string
	Team     string
	// Target are the target params other than the environment, as hidden fields.
	Target  map[string]string
	Changes []ChangeRow
	// Override: the viewer is an admin and may break the glass.
	Override bool
}
