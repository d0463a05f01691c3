// Package notify is flightdeck's one wake-up module: the topics processes
// NOTIFY each other on and their payloads (this file), the Bus that sends
// them after the writes they announce have committed (bus.go), the
// Listener that holds the process's LISTEN connection and hands each topic
// to its handlers (listen.go), and the Hub that wakes in-process watchers
// of a task's events (hub.go, changes.go). A wake-up is only ever a hint
// (invariant 3): a lost one costs a poll interval, never work, since every
// reader reads what changed from the database.
package notify

import (
	"encoding/json"
	"slices"
)

// Topic names a LISTEN channel.
type Topic string

const (
	// TaskReady: tasks became claimable (submitted, handed back, resumed,
	// a concurrency key freed). Payload Ready.
	TaskReady Topic = "task_ready"
	// TaskEvents: tasks have new events. Payload Events.
	TaskEvents Topic = "task_events"
	// TaskCancel: running tasks were asked to stop and compensate. Payload
	// Cancel.
	TaskCancel Topic = "task_cancel"
	// TaskPause: running tasks were asked to pause after the step they are
	// in. Payload Cancel.
	TaskPause Topic = "task_pause"
)

// Topics are every topic, for LISTEN.
var Topics = []Topic{TaskReady, TaskEvents, TaskCancel, TaskPause}

// Ready is TaskReady's payload: the buses that sent it (a process skips the
// wake-ups its own bus already delivered in memory).
type Ready struct {
	Origins []string `json:"origins"`
}

// Events is TaskEvents' payload.
type Events struct {
	Tasks []TaskSeq `json:"tasks"`
}

// TaskSeq says a task has events up to Seq.
type TaskSeq struct {
	ID  string `json:"id"`
	Seq int    `json:"seq"`
}

// Cancel is TaskCancel's payload.
type Cancel struct {
	Tasks []string `json:"tasks"`
}

// Notes are the wake-ups of writes that committed.
type Notes struct {
	Ready  bool
	Events []TaskSeq
	Cancel []string
	Pause  []string
	// Ended: the writes ended tasks. In-process only (no topic): it wakes
	// the process's rollup fold at once instead of at its next tick.
	Ended bool
}

// Add merges o into n.
func (n *Notes) Add(o Notes) {
	n.Ready = n.Ready || o.Ready
	n.Ended = n.Ended || o.Ended
	n.Events = append(n.Events, o.Events...)
	n.Cancel = append(n.Cancel, o.Cancel...)
	n.Pause = append(n.Pause, o.Pause...)
}

func (n Notes) empty() bool {
	return !n.Ready && len(n.Events) == 0 && len(n.Cancel) == 0 && len(n.Pause) == 0
}

// DecodeReady reads a TaskReady payload; fromOthers says whether any bus but
// own sent it (an unreadable payload counts as another's: waking costs
// little).
func DecodeReady(payload, own string) (fromOthers bool) {
	var r Ready
	if err := json.Unmarshal([]byte(payload), &r); err != nil || len(r.Origins) == 0 {
		return true
	}
	return slices.ContainsFunc(r.Origins, func(o string) bool { return o != own })
}

// DecodeEvents reads a TaskEvents payload (nothing when it is unreadable).
func DecodeEvents(payload string) []TaskSeq {
	var e Events
	_ = json.Unmarshal([]byte(payload), &e)
	return e.Tasks
}

// DecodeCancel reads a TaskCancel or TaskPause payload (nothing when it is unreadable).
func DecodeCancel(payload string) []string {
	var c Cancel
	_ = json.Unmarshal([]byte(payload), &c)
	return c.Tasks
}
