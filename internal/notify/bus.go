package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// SendFunc sends notifications: topics[i] with payloads[i].
type SendFunc func(ctx context.Context, topics, payloads []string) error

// Bus sends wake-ups after commit. A NOTIFY inside the writing transaction
// would take PostgreSQL's notify lock from its commit until the commit is
// flushed, so notifying transactions would commit one after another; here
// whatever committed while one batch was on the wire goes out in the next.
type Bus struct {
	send   SendFunc
	origin string

	mu      sync.Mutex
	pending Notes
	sending bool
	sent    chan struct{} // closed when the batch holding pending is sent
	ready   map[int]func()
	readyN  int
	pause   map[int]func(ids []string)
	events  map[int]func(seqs []TaskSeq)
}

// NewBus returns a bus that sends through send.
func NewBus(send SendFunc) *Bus {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return &Bus{send: send, origin: hex.EncodeToString(b), ready: map[int]func(){}, pause: map[int]func([]string){},
		events: map[int]func([]TaskSeq){}}
}

// Origin names this bus in its Ready payloads.
func (b *Bus) Origin() string { return b.origin }

// OnReady calls fn in this process each time the bus announces claimable
// tasks, right away and before the NOTIFY goes out: a pool in the same
// process claims without the notification's round trip. fn must not block.
func (b *Bus) OnReady(fn func()) (stop func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.readyN++
	id := b.readyN
	b.ready[id] = fn
	return func() {
		b.mu.Lock()
		delete(b.ready, id)
		b.mu.Unlock()
	}
}

// OnPause calls fn in this process with the tasks each pause request is
// for, before Send returns: a pool in the same process hears of the pause
// of a task it holds before the person's request is answered, without the
// NOTIFY's round trip. fn must not block for long.
func (b *Bus) OnPause(fn func(ids []string)) (stop func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.readyN++
	id := b.readyN
	b.pause[id] = fn
	return func() {
		b.mu.Lock()
		delete(b.pause, id)
		b.mu.Unlock()
	}
}

// OnEvents calls fn in this process with the tasks each Send says have new
// events (with their seqs), before Send returns: the Hub wakes this
// process's streams without the NOTIFY's round trip (which follows and
// wakes them again, harmlessly). fn must not block.
func (b *Bus) OnEvents(fn func(seqs []TaskSeq)) (stop func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.readyN++
	id := b.readyN
	b.events[id] = fn
	return func() {
		b.mu.Lock()
		delete(b.events, id)
		b.mu.Unlock()
	}
}

// Send queues n (the writes it announces have committed) and returns a
// channel closed once it is sent, or dropped because the database could not
// be reached.
func (b *Bus) Send(n Notes) <-chan struct{} {
	b.mu.Lock()
	if n.empty() {
		b.mu.Unlock()
		c := make(chan struct{})
		close(c)
		return c
	}
	b.pending.Add(n)
	if b.sent == nil {
		b.sent = make(chan struct{})
	}
	sent := b.sent
	if !b.sending {
		b.sending = true
		go b.drain()
	}
	var local []func()
	if n.Ready {
		for _, fn := range b.ready {
			local = append(local, fn)
		}
	}
	var pause []func([]string)
	if len(n.Pause) > 0 {
		for _, fn := range b.pause {
			pause = append(pause, fn)
		}
	}
	var events []func([]TaskSeq)
	if len(n.Events) > 0 {
		for _, fn := range b.events {
			events = append(events, fn)
		}
	}
	b.mu.Unlock()
	for _, fn := range local {
		fn()
	}
	for _, fn := range pause {
		fn(n.Pause)
	}
	for _, fn := range events {
		fn(n.Events)
	}
	return sent
}

func (b *Bus) drain() {
	for {
		b.mu.Lock()
		batch, sent := b.pending, b.sent
		b.pending, b.sent = Notes{}, nil
		if batch.empty() {
			b.sending = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		topics, payloads := b.encode(batch)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = b.send(ctx, topics, payloads) // a lost wake-up costs a poll interval
		cancel()
		close(sent)
	}
}

// maxPayload stays under PostgreSQL's 8000-byte NOTIFY limit.
const maxPayload = 7000

// encode turns a batch into notifications, each payload under maxPayload.
func (b *Bus) encode(n Notes) (topics, payloads []string) {
	add := func(t Topic, v any) {
		p, _ := json.Marshal(v)
		topics, payloads = append(topics, string(t)), append(payloads, string(p))
	}
	if n.Ready {
		add(TaskReady, Ready{Origins: []string{b.origin}})
	}
	// The latest seq of each task, in order of first mention.
	seqs := map[string]int{}
	var order []string
	for _, e := range n.Events {
		if _, ok := seqs[e.ID]; !ok {
			order = append(order, e.ID)
		}
		seqs[e.ID] = max(seqs[e.ID], e.Seq)
	}
	var evs Events
	size := 0
	for _, id := range order {
		if size > maxPayload-100 {
			add(TaskEvents, evs)
			evs, size = Events{}, 0
		}
		evs.Tasks = append(evs.Tasks, TaskSeq{ID: id, Seq: seqs[id]})
		size += len(id) + 30
	}
	if len(evs.Tasks) > 0 {
		add(TaskEvents, evs)
	}
	for _, l := range []struct {
		topic Topic
		ids   []string
	}{{TaskCancel, n.Cancel}, {TaskPause, n.Pause}} {
		ids := slices.Compact(slices.Sorted(slices.Values(l.ids)))
		for len(ids) > 0 {
			k := min(len(ids), maxPayload/50)
			add(l.topic, Cancel{Tasks: ids[:k]})
			ids = ids[k:]
		}
	}
	return topics, payloads
}
