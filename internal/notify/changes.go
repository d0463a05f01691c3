package notify

import "sync"

// ChangesMax bounds the ids a Changes set holds between two Takes. A
// consumer that falls this far behind loses the overflow (Overflowed says
// so); the set never blocks the Hub.
const ChangesMax = 1 << 16

// Change is one task with new events: Seq is the highest seq notified for
// it (0 when the publisher did not say).
type Change struct {
	TaskID string
	Seq    int
}

// Changes collects the tasks with new events until its consumer takes them,
// for one per-process reader that loads each changed task once and fans it
// out (team feeds). It coalesces: a task that changes ten
// times before the reader comes round is taken once, with the highest seq,
// so a burst costs the reader one batch rather than a backlog.
type Changes struct {
	// C has a value when Take would return something.
	C   chan struct{}
	hub *Hub

	mu       sync.Mutex
	pending  map[string]int // task id → highest seq notified
	order    []string       // first-notified order, so a batch keeps the order of commits
	overflow bool
}

// SubscribeChanges returns a change set fed by every task's notifications
// (by Publish too when the hub has no Listener). The caller must Close it.
func (h *Hub) SubscribeChanges() *Changes {
	c := &Changes{C: make(chan struct{}, 1), hub: h, pending: map[string]int{}}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changes[c] = struct{}{}
	return c
}

// Close ends the change set.
func (c *Changes) Close() {
	c.hub.mu.Lock()
	defer c.hub.mu.Unlock()
	delete(c.hub.changes, c)
}

// Take returns the changes collected since the last Take, oldest first, and
// empties the set.
func (c *Changes) Take() []Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Change, len(c.order))
	for i, id := range c.order {
		out[i] = Change{TaskID: id, Seq: c.pending[id]}
	}
	c.order = c.order[:0]
	clear(c.pending)
	return out
}

// Overflowed reports (and clears) whether changes were dropped because the
// set was full.
func (c *Changes) Overflowed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.overflow
	c.overflow = false
	return o
}

// add merges cs into the set and wakes the reader; it never blocks.
func (c *Changes) add(cs []Change) {
	if len(cs) == 0 {
		return
	}
	c.mu.Lock()
	for _, ch := range cs {
		seq, ok := c.pending[ch.TaskID]
		switch {
		case ok:
			c.pending[ch.TaskID] = max(seq, ch.Seq)
		case len(c.order) >= ChangesMax:
			c.overflow = true
		default:
			c.pending[ch.TaskID] = ch.Seq
			c.order = append(c.order, ch.TaskID)
		}
	}
	c.mu.Unlock()
	signal(c.C)
}

// Requeue puts changes back (a reader whose load failed), merged with
// whatever arrived meanwhile.
func (c *Changes) Requeue(cs []Change) { c.add(cs) }
