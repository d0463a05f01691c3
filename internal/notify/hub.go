package notify

import (
	"sync"
)

// Hub wakes in-process subscribers of a task when its events change. It
// carries no events itself: a subscriber reads them from the store after its
// last seq, so ordering and gap-freedom come from the database.
type Hub struct {
	mu      sync.Mutex
	subs    map[string]map[*Subscription]struct{}
	all     map[*Subscription]struct{} // subscribers of every task
	changes map[*Changes]struct{}
	// attached: notifications feed the hub, so Changes take only those
	// (they carry the seq; an in-process Publish is followed by one).
	attached bool
}

// Subscription delivers wake-ups on C; a wake-up that finds C full is
// dropped, which is fine: the pending one already says "look again".
type Subscription struct {
	C      chan struct{}
	taskID string
	hub    *Hub
}

// NewHub returns a hub; connect it to a Listener with Attach.
func NewHub() *Hub {
	return &Hub{subs: map[string]map[*Subscription]struct{}{}, all: map[*Subscription]struct{}{},
		changes: map[*Changes]struct{}{}}
}

// Attach feeds the hub from n's task_events notifications, and wakes every
// subscriber after a reconnection (notifications may have been lost).
func (h *Hub) Attach(n *Listener) {
	h.mu.Lock()
	h.attached = true
	h.mu.Unlock()
	n.On(TaskEvents, h.notify)
	n.OnConnect(h.WakeAll)
}

// Subscribe returns a subscription for one task's events ("" for all tasks).
// The caller must Close it.
func (h *Hub) Subscribe(taskID string) *Subscription {
	s := &Subscription{C: make(chan struct{}, 1), taskID: taskID, hub: h}
	h.mu.Lock()
	defer h.mu.Unlock()
	if taskID == "" {
		h.all[s] = struct{}{}
		return s
	}
	m := h.subs[taskID]
	if m == nil {
		m = map[*Subscription]struct{}{}
		h.subs[taskID] = m
	}
	m[s] = struct{}{}
	return s
}

// Close ends the subscription.
func (s *Subscription) Close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.taskID == "" {
		delete(h.all, s)
		return
	}
	if m := h.subs[s.taskID]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(h.subs, s.taskID)
		}
	}
}

// Publish wakes the subscribers of taskIDs (in-process shortcut; the
// notification from the database will wake them again, harmlessly).
func (h *Hub) Publish(taskIDs ...string) {
	cs := make([]Change, len(taskIDs))
	for i, id := range taskIDs {
		cs[i] = Change{TaskID: id}
	}
	h.publish(cs, taskIDs, false)
}

func (h *Hub) publish(cs []Change, taskIDs []string, notified bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// A Changes reader loads what it takes: an in-process Publish, which
	// the commit's notification follows, would only cost a second load.
	if notified || !h.attached {
		for c := range h.changes {
			c.add(cs)
		}
	}
	for _, id := range taskIDs {
		for s := range h.subs[id] {
			signal(s.C)
		}
	}
	if len(taskIDs) > 0 {
		for s := range h.all {
			signal(s.C)
		}
	}
}

// WakeAll wakes every subscriber.
func (h *Hub) WakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.subs {
		for s := range m {
			signal(s.C)
		}
	}
	for s := range h.all {
		signal(s.C)
	}
}

// Follow wakes the hub's subscribers from b's sends in this process: a
// write this process made wakes its own streams at once, not a NOTIFY
// round trip later. The change sets take these only while no Listener
// feeds the hub (the NOTIFY that follows would be a second load of each
// task). It returns the function that stops it.
func (h *Hub) Follow(b *Bus) (stop func()) {
	return b.OnEvents(func(seqs []TaskSeq) { h.events(seqs, false) })
}

// notify reads a TaskEvents payload.
func (h *Hub) notify(payload string) { h.events(DecodeEvents(payload), true) }

// events wakes the subscribers of seqs' tasks and feeds the change sets
// (see publish for notified).
func (h *Hub) events(seqs []TaskSeq, notified bool) {
	if len(seqs) == 0 {
		return
	}
	ids := make([]string, len(seqs))
	cs := make([]Change, len(seqs))
	for i, ts := range seqs {
		ids[i], cs[i] = ts.ID, Change{TaskID: ts.ID, Seq: ts.Seq}
	}
	h.publish(cs, ids, notified)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
