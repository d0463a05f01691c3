// Package pages holds the content of each page; handlers wrap it in the
// layout (or send it alone to htmx). Props structs are plain data.
package pages

import (
	"net/url"
	"strings"
	"time"
)

// LoginProps are the inputs of Login.
type LoginProps struct {
	Email, Error, CSRFToken, Next string
	SSO                           bool // single sign-on is configured: offer "Sign in with SSO"
}

// SSOURL starts single sign-on, coming back to next.
func (p LoginProps) SSOURL() string {
	if p.Next == "" || p.Next == "/tasks" {
		return "/login/oidc"
	}
	return "/login/oidc?next=" + url.QueryEscape(p.Next)
}

// TaskRow is one task in the list.
type TaskRow struct {
	ID, Kind, Pipeline, State, Priority, CreatedBy string
	// Target names what a deploy goes to ("shop · production"; an agent
	// task: the start of its prompt), TargetTitle the same with the
	// params' names; Version is its version param ("" for none).
	Target, TargetTitle, Version string
	CreatedAt                    time.Time
	Ago                          string     // CreatedAt relative to the render ("5 min ago")
	StartedAt                    *time.Time // nil: not started yet
	Duration                     string     // finished - started, or so far ("" before the start)
	Running                      bool       // not finished: the duration ticks in the browser
	CancelRequested              bool       // a cancel is being carried out: "cancelling"
	// Error and Skipped make the state's word (words.Outcome): "rejected",
	// "completed with 1 step skipped".
	Error   string
	Skipped int
}

// TaskListProps are the inputs of TaskList.
type TaskListProps struct {
	Tasks []TaskRow
	Next  string // cursor of the next page; "" when none
	// Filters, as given; "" does not filter.
	State, Pipeline, CreatedBy string
	// Filters the dashboard links with (no form field: shown as a note).
	Kind, Priority, FinishedAfter, FinishedBefore string
	States, Pipelines                             []string // the choices of the filter form
	// LoadedAt is when the page read its tasks: its socket announces the
	// tasks submitted after it, whenever it (re)connects.
	LoadedAt time.Time
}

// Filtered reports whether any filter is set.
func (p TaskListProps) Filtered() bool {
	return p.State != "" || p.Pipeline != "" || p.CreatedBy != "" || p.Linked()
}

// Linked reports whether a filter without a form field is set.
func (p TaskListProps) Linked() bool {
	return p.Kind != "" || p.Priority != "" || p.FinishedAfter != "" || p.FinishedBefore != ""
}

// Query is the list's query string with its filters and, when before is
// set, the page cursor.
func (p TaskListProps) Query(before string) string {
	v := url.Values{}
	for k, x := range map[string]string{"state": p.State, "pipeline": p.Pipeline, "created_by": p.CreatedBy, "before": before,
		"kind": p.Kind, "priority": p.Priority, "finished_after": p.FinishedAfter, "finished_before": p.FinishedBefore} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v.Encode()
}

// SocketURL is the address of the list's socket: the filters and the
// page's load time (for the notice of new tasks) and the rows the page
// shows, whose current state the socket sends each time it (re)connects,
// so rows that changed and tasks submitted while it was down catch up.
// Ids are UUIDs: nothing in them needs escaping.
func (p TaskListProps) SocketURL() string {
	q := p.Query("")
	if !p.LoadedAt.IsZero() {
		if q != "" {
			q += "&"
		}
		q += "since=" + url.QueryEscape(p.LoadedAt.UTC().Format(time.RFC3339Nano))
	}
	if len(p.Tasks) > 0 {
		ids := make([]string, len(p.Tasks))
		for i, t := range p.Tasks {
			ids[i] = t.ID
		}
		if q != "" {
			q += "&"
		}
		q += "rows=" + strings.Join(ids, ",")
	}
	return "/tasks/ws?" + q
}

// ErrorProps are the inputs of Error.
type ErrorProps struct {
	Status         int
	Title, Message string
	RequestID      string
	// Back and BackLabel are the way on; default the task list.
	Back, BackLabel string
}

// PipelineParam describes one parameter for people.
type PipelineParam struct {
	Name, Description string
	Pattern           string // the exact rule, for those who read regular expressions
	Required, Secret  bool
}

// PipelineRow is one pipeline in the list.
type PipelineRow struct {
	Name, Description string
	Params            []PipelineParam
	Steps             []string
	Approvals         []ApprovalNote
}

// PipelineListProps are the inputs of PipelineList.
type PipelineListProps struct {
	Pipelines []PipelineRow
}

// WorkerRow is one worker process.
type WorkerRow struct {
	ID, Host     string
	Slots, Busy  int
	HeartbeatAge time.Duration
}

// DashboardProps are the inputs of Dashboard.
type DashboardProps struct {
	Alerts                                    []AlertRow // open alerts of local monitors (local_alerts.templ)
	Pending, Running, Waiting, NeedsAttention int
	Paused                                    int // paused by a person, or waiting on a failed step's decision
	PendingByPriority                         map[string]int
	OldestPending                             time.Duration
	Workers                                   []WorkerRow
	// The last hour from HourStart, one bar a minute, oldest first.
	HourStart  time.Time
	Throughput []MinuteBar
	// Tasks that ended in the last hour, by outcome.
	CompletedHour, FailedHour, CancelledHour int
	// The last days from DayStart (UTC midnight), one bar a day.
	DayStart time.Time
	Daily    []DayBar
	// Run times of completed tasks since RunTimeSince, per pipeline.
	RunTimeSince time.Time
	Durations    []DurationRow
	// DORA figures of deploy pipelines since HealthSince.
	HealthSince time.Time
	HealthDays  int
	Health      []HealthRow
}

// MinuteBar is one minute of the throughput chart.
type MinuteBar struct {
	Minute                       time.Time
	Completed, Failed, Cancelled int
}

// DayBar is one UTC day of the daily chart.
type DayBar struct {
	Day                          time.Time
	Completed, Failed, Cancelled int
}

// DurationRow is the run time of one pipeline's completed tasks (agent
// tasks: Pipeline ""), time waiting for people left out.
type DurationRow struct {
	Pipeline   string
	Runs       int
	P50, P95   time.Duration
	MeanWaited time.Duration
}

// HealthRow is the DORA view of one deploy pipeline.
type HealthRow struct {
	Pipeline                     string
	Deploys, Failures, Cancelled int
	FailureRate                  float64 // 0..1
	Restores                     int
	MeanTimeToRestore            time.Duration
}

// FormField is one generated input of the submit form. Its constraint
// attributes come from the parameter's schema; the server checks the same.
type FormField struct {
	Name, Type, Value string
	Error             string // what is wrong, after the name ("is required")
	Hint              string // what the value must look like, in words
	Pattern           string // for the pattern attribute (the browser's dialect); "" for none
	MaxLength         int    // 0: none
	Options           []string
	Required, Secret  bool
	Min, Max          *int64
	Focus             bool // the first field with an error: focused on load
}

// ApprovalNote says that a step waits for a person: which roles decide
// (never the task's creator) and when.
type ApprovalNote struct {
	Step  string
	Roles []string
	When  string // in words; "" with Expr "" means always
	Expr  string // the condition as written, when no words fit
}

// TaskNewProps are the inputs of TaskNew.
type TaskNewProps struct {
	Pipeline, Description, Priority, CSRFToken, Error string
	Pipelines                                         []string
	Fields                                            []FormField
	Approvals                                         []ApprovalNote
	// Rules are the environments' rules that apply to this pipeline's
	// deploys, in words; CanOverride offers an admin the break-glass.
	Rules       []string
	CanOverride bool
	RunAt       string // the run_at field's value (UTC, "2006-01-02T15:04")
}

// Invalid lists the fields with an error, in form order.
func (p TaskNewProps) Invalid() []FormField {
	var out []FormField
	for _, f := range p.Fields {
		if f.Error != "" {
			out = append(out, f)
		}
	}
	return out
}

// InboxItem is one decision waiting in "Needs my approval", or (in
// "Waiting for someone else") one on the viewer's own task.
type InboxItem struct {
	ID, TaskID, Title, Step, Team, CreatedBy string
	// What changes: the deploy's target, and its version from the
	// target's current one (From "" when unknown; FromNote says why).
	Target, TargetTitle    string
	VersionParam, From, To string
	FromNote               string
	// ToURL and CompareURL link the version and the change to their
	// source (the pipeline's links; "" when it has none).
	ToURL, CompareURL      string
	Roles                  []string // who may decide (with the creator for a tool call)
	Runs                   string   // the step's action
	Params                 []KV     // the deploy's other params (secrets redacted)
	Tool                   string   // an agent's tool call: the tool
	Args, Plan             []KV     // its arguments and resolved plan
	RequestedAt, ExpiresAt time.Time
	ToolCall               bool // an agent's tool call rather than a pipeline step
	// Environment: an environment's reviewers, Approved of Required so far.
	Environment        bool
	Approved, Required int
	Changes            []ChangeRow // what the deploy changes (nil: not shown)
}

// KV is one named value shown to people.
type KV struct{ Key, Value string }

// ApprovalInboxProps are the inputs of ApprovalInbox.
type ApprovalInboxProps struct {
	Items      []InboxItem
	Waiting    []InboxItem // the viewer's own tasks that wait for someone else (read-only)
	Attention  []TaskRow   // needs_attention tasks of the teams the viewer administers
	IsAdmin    bool
	CSRFToken  string
	Flash      string
	FlashError bool
}
