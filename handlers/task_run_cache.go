package handlers

import (
	"slices"
	"sync"
	"time"
)

// The run models kept for sockets to resume from, and for how long: a page
// connects its socket within moments of loading, a dropped socket
// reconnects within seconds.
const (
	runModelsKept = 32
	runModelTTL   = time.Minute
)

// runModels hands a run page's folded events to its socket: the page keeps
// the model it rendered (at its seq), and a socket that connects saying
// that seq (after_seq) takes a copy and reads only the events after it,
// instead of the task's whole history again. A socket keeps a copy of its
// model at each seq it tells the page, before telling it, for the page's
// reconnect. A miss (another process, an evicted or expired model) folds
// the history from the start, as a page load does.
type runModels struct {
	mu   sync.Mutex
	byID map[runModelKey]runModelEntry
}

type runModelKey struct {
	task string
	seq  int
}

type runModelEntry struct {
	m  *runModel
	at time.Time
}

func newRunModels() *runModels { return &runModels{byID: map[runModelKey]runModelEntry{}} }

// keep stores m, which its caller no longer changes, under its seq, in
// place of the model kept at drop (-1: none); the oldest go when too many
// are kept.
func (c *runModels) keep(taskID string, m *runModel, drop int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byID, runModelKey{taskID, drop})
	c.byID[runModelKey{taskID, m.seq}] = runModelEntry{m: m, at: time.Now()}
	for len(c.byID) > runModelsKept {
		var oldest runModelKey
		var at time.Time
		for k, e := range c.byID {
			if at.IsZero() || e.at.Before(at) {
				oldest, at = k, e.at
			}
		}
		delete(c.byID, oldest)
	}
}

// resume is a copy of the model of taskID at seq, nil when none is kept.
func (c *runModels) resume(taskID string, seq int) *runModel {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[runModelKey{taskID, seq}]
	if !ok || time.Since(e.at) > runModelTTL {
		return nil
	}
	return e.m.clone()
}

// clone copies m deeply enough for either to fold on: slices are clipped,
// so the copy's appends reallocate, and m's appends write past the end the
// copy sees; what fold replaces (retry waits, times, the deploy view) is
// shared.
func (m *runModel) clone() *runModel {
	c := *m
	c.events, c.logs = slices.Clip(m.events), slices.Clip(m.logs)
	c.steps = make(map[int]*stepTrack, len(m.steps))
	for i, st := range m.steps {
		s := *st
		s.fwd.lines, s.comp.lines = slices.Clip(st.fwd.lines), slices.Clip(st.comp.lines)
		c.steps[i] = &s
	}
	return &c
}
