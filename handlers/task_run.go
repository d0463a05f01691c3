package handlers

import (
	"encoding/json"
	"strings"
	"time"

	"flightdeck/views/components"
	"flightdeck/views/pages"
	"flightdeck/workflow/task"
)

// Bounds of what the run page holds: the newest log lines of each step's
// log (the artifact has them all) and of the raw event log (the API has
// them all).
const (
	logLinesShown = 2000
	eventsShown   = 200
)

// runModel is what the run page knows of a task's events, folded in seq
// order. The page's socket keeps one and folds only the new events into it
// on each push.
type runModel struct {
	seq    int // events up to this seq are folded in
	steps  map[int]*stepTrack
	events []task.Event // the newest eventsShown events that are not log lines
	logs   []task.Event // and the newest eventsShown log lines, for the raw log's filter
	// deploy is the run's deploy view once the run has started: a live
	// page's pushes need not look up the previous deploy again.
	deploy *pages.DeployView
}

// stepTrack is what events say of one step beyond its row: its two logs
// (forward attempts and undo), a retry's wait, when its undo ran.
type stepTrack struct {
	fwd, comp  laneTrack
	compSeq    int // seq of its first step.compensating: later lines are the undo's
	failedSeq  int // seq of its step.failed (an error, not a stop): the run's failure
	compStart  *time.Time
	compEnd    *time.Time
	fwdRetries int // max attempts, as its retry said
}

// laneTrack is one log of a step and the retry it waits out.
type laneTrack struct {
	lines    []components.LogLine
	count    int // lines so far: the next one's number less one
	earlier  int // lines dropped from the front (still in the artifact)
	artifact string
	retry    *retryWait
}

// retryWait is a step.retrying event's promise: attempt next of max at at.
type retryWait struct {
	at        time.Time
	next, max int
}

func newRunModel() *runModel { return &runModel{steps: map[int]*stepTrack{}} }

func (m *runModel) track(idx int) *stepTrack {
	st := m.steps[idx]
	if st == nil {
		st = &stepTrack{}
		m.steps[idx] = st
	}
	return st
}

// fold adds events with seq above m.seq and at most upTo.
func (m *runModel) fold(events []task.Event, upTo int) {
	for _, e := range events {
		if e.Seq <= m.seq || e.Seq > upTo {
			continue
		}
		m.seq = e.Seq
		if e.Type == task.EventStepLog {
			m.logs = keepNewest(append(m.logs, e), eventsShown)
		} else {
			m.events = keepNewest(append(m.events, e), eventsShown)
		}
		if e.Step <= 0 || !strings.HasPrefix(string(e.Type), "step.") && e.Type != task.EventArtifactCreated {
			continue
		}
		st := m.track(e.Step)
		undo := st.compSeq > 0
		lane := &st.fwd
		if undo {
			lane = &st.comp
		}
		at := e.Time
		switch e.Type {
		case task.EventStepLog:
			lane.count++
			lane.lines = append(lane.lines, components.LogLine{Seq: e.Seq, N: lane.count, Time: e.Time, Text: e.Message})
			if n := len(lane.lines); n > 2*logLinesShown {
				lane.earlier += n - logLinesShown
				lane.lines = append([]components.LogLine(nil), lane.lines[n-logLinesShown:]...)
			}
		case task.EventStepStarted:
			lane.retry = nil
		case task.EventStepRetrying:
			lane.retry = parseRetry(e.Data)
			if !undo && lane.retry != nil {
				st.fwdRetries = lane.retry.max
			}
		case task.EventStepCompensating:
			if st.compSeq == 0 {
				st.compSeq, st.compStart = e.Seq, undoStart(e.Data, at)
			}
			st.comp.retry = nil
		case task.EventStepCompensated:
			st.compEnd, st.comp.retry = &at, nil
		case task.EventStepCompleted:
			lane.retry = nil
		case task.EventStepFailed:
			lane.retry = nil
			if undo {
				st.compEnd = &at
			} else if e.Status == task.StatusError && st.failedSeq == 0 {
				st.failedSeq = e.Seq
			}
		case task.EventArtifactCreated:
			var d struct {
				ID   string `json:"artifact_id"`
				Name string `json:"name"`
			}
			if json.Unmarshal(e.Data, &d) == nil && d.ID != "" {
				if strings.HasSuffix(d.Name, ".compensate.log") {
					st.comp.artifact = d.ID
				} else {
					st.fwd.artifact = d.ID
				}
			}
		}
	}
}

// keepNewest trims s to its last n elements once it holds twice that, so
// appending stays cheap.
func keepNewest(s []task.Event, n int) []task.Event {
	if len(s) > 2*n {
		return append([]task.Event(nil), s[len(s)-n:]...)
	}
	return s
}

// tail is the last n of s.
func tail[T any](s []T, n int) []T {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func parseRetry(data json.RawMessage) *retryWait {
	var d struct {
		At   string `json:"next_attempt_at"`
		Next int    `json:"next_attempt"`
		Max  int    `json:"max_attempts"`
	}
	if json.Unmarshal(data, &d) != nil {
		return nil
	}
	at, err := time.Parse(time.RFC3339Nano, d.At)
	if err != nil {
		return nil // an event written before retries said when
	}
	return &retryWait{at: at, next: d.Next, max: d.Max}
}

// undoStart is when an undo started: as its worker said (data.started_at),
// else the time of its event's write.
func undoStart(data json.RawMessage, at time.Time) *time.Time {
	var d struct {
		StartedAt time.Time `json:"started_at"`
	}
	if json.Unmarshal(data, &d) == nil && !d.StartedAt.IsZero() {
		return &d.StartedAt
	}
	return &at
}

// failed is the index of the step whose failure ended the run, 0 for none.
func (m *runModel) failed() int {
	idx, seq := 0, 0
	for i, st := range m.steps {
		if st.failedSeq > 0 && (seq == 0 || st.failedSeq < seq) {
			idx, seq = i, st.failedSeq
		}
	}
	return idx
}
