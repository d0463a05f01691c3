package event

import (
	"strings"
	"sync"
)

// Hub wakes in-process subscribers of a task when its events change. It
// carries no events itself: a subscriber reads them from the store after its
// last seq, so ordering and gap-freedom come from the database.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[*Subscription]struct{}
	all  map[*Subscription]struct{} // subscribers of every task (team feeds filter themselves)
}

// Subscription delivers wake-ups on C; a wake-up that finds C full is
// dropped, which is fine: the pending one already says "look again".
type Subscription struct {
	C      chan struct{}
	taskID string
	hub    *Hub
}

// NewHub returns a hub; connect it to a Notifier with Attach.
func NewHub() *Hub {
	return &Hub{subs: map[string]map[*Subscription]struct{}{}, all: map[*Subscription]struct{}{}}
}

// Attach feeds the hub from n's task_events notifications, and wakes every
// subscriber after a reconnection (notifications may have been lost).
func (h *Hub) Attach(n *Notifier) {
	n.On(ChannelTaskEvents, h.notify)
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
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range taskIDs {
		for s := range h.subs[id] {
			wake(s.C)
		}
	}
	if len(taskIDs) > 0 {
		for s := range h.all {
			wake(s.C)
		}
	}
}

// WakeAll wakes every subscriber.
func (h *Hub) WakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.subs {
		for s := range m {
			wake(s.C)
		}
	}
	for s := range h.all {
		wake(s.C)
	}
}

// notify parses "id:seq,id:seq" payloads.
func (h *Hub) notify(payload string) {
	if payload == "" {
		return
	}
	var ids []string
	for _, part := range strings.Split(payload, ",") {
		id, _, _ := strings.Cut(part, ":")
		if id != "" {
			ids = append(ids, id)
		}
	}
	h.Publish(ids...)
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
