// Package pages holds the content of each page; handlers wrap it in the
// layout (or send it alone to htmx). Props structs are plain data.
package pages

import "time"

// LoginProps are the inputs of Login.
type LoginProps struct {
	Email, Error, CSRFToken, Next string
}

// TaskRow is one task in the list.
type TaskRow struct {
	ID, Kind, Pipeline, State, Priority, CreatedBy string
	CreatedAt                                      time.Time
}

// TaskListProps are the inputs of TaskList.
type TaskListProps struct {
	Tasks []TaskRow
	Next  string // cursor of the next page; "" when none
}

// ErrorProps are the inputs of Error.
type ErrorProps struct {
	Status         int
	Title, Message string
	RequestID      string
}

// PipelineParam describes one parameter for people.
type PipelineParam struct {
	Name, Description string
	Required, Secret  bool
}

// PipelineRow is one pipeline in the list.
type PipelineRow struct {
	Name, Description string
	Params            []PipelineParam
	Steps             []string
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
	PendingByPriority                         map[string]int
	OldestPending                             time.Duration
	Workers                                   []WorkerRow
}

// FormField is one generated input of the submit form.
type FormField struct {
	Name, Type, Value, Error, Pattern string
	Options                           []string
	Required, Secret                  bool
	Min, Max                          *int64
}

// TaskNewProps are the inputs of TaskNew.
type TaskNewProps struct {
	Pipeline, Description, Priority, CSRFToken, Error string
	Pipelines                                         []string
	Fields                                            []FormField
}
