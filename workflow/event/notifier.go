// Package event carries task events to whoever watches: the Notifier keeps
// one LISTEN connection per process and fans its notifications out, and the
// Hub wakes subscribers of a task when new events for it are committed, by
// any process. Events themselves are always read from the database by seq,
// so a wake-up that is lost or repeated costs latency, never correctness.
package event

import (
	"context"
	"log/slog"
	"sync"

	"flightdeck/internal/wake"
	"flightdeck/store"
)

// Notifier owns the process's LISTEN connection.
type Notifier struct {
	store  *store.Store
	logger *slog.Logger

	mu        sync.RWMutex
	handlers  map[wake.Topic][]func(payload string)
	connected []func()
}

// NewNotifier returns a notifier; register handlers before Run.
func NewNotifier(st *store.Store, logger *slog.Logger) *Notifier {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Notifier{store: st, logger: logger, handlers: map[wake.Topic][]func(string){}}
}

// On registers fn for notifications of topic (decode the payload with
// package wake). fn runs on the listening goroutine: it must not block.
func (n *Notifier) On(topic wake.Topic, fn func(payload string)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.handlers[topic] = append(n.handlers[topic], fn)
}

// OnConnect registers fn to run after every (re)connection, when
// notifications may have been missed.
func (n *Notifier) OnConnect(fn func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.connected = append(n.connected, fn)
}

// Run listens until ctx ends, reconnecting as needed.
func (n *Notifier) Run(ctx context.Context) error {
	return n.store.Listen(ctx, store.ListenParams{
		Channels: []string{string(wake.TaskReady), string(wake.TaskEvents), string(wake.TaskCancel), string(wake.TaskPause)},
		Logger:   n.logger,
		Handle: func(note store.Notification) {
			n.mu.RLock()
			hs := n.handlers[wake.Topic(note.Channel)]
			n.mu.RUnlock()
			for _, h := range hs {
				h(note.Payload)
			}
		},
		Connected: func() {
			n.mu.RLock()
			cs := n.connected
			n.mu.RUnlock()
			for _, c := range cs {
				c()
			}
		},
	})
}
