package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Channels of the wake-ups the store sends (LISTEN names).
const (
	// claimable work exists; payload "" for new tasks, "requeue" for tasks
	// claimable again (released, rescued, resumed, re-prioritised), which
	// may lie before where a claimer's walk starts (ClaimKey)
	//
	// The store's own wake-ups carry its origin after an "@" ("@origin",
	// "requeue@origin") and are delivered in its process at once
	// (OnTaskReady); payloads are comma-joined when batched.
	channelTaskReady  = "task_ready"
	channelTaskEvents = "task_events" // payload "id:seq,id:seq…": those tasks have events up to seq
)

// maxNotifyPayload stays under PostgreSQL's 8000-byte NOTIFY limit.
const maxNotifyPayload = 7000

// wakeups sends the NOTIFYs of the hot paths (submit, claim, finish,
// progress) after their own statement committed, batched, instead of inside
// it. A NOTIFY inside a transaction takes a database-wide lock from its
// commit until the commit is flushed, so every notifying transaction
// commits one after another and group commit is lost: on a disk with
// millisecond fsyncs that caps the whole queue at a few hundred commits a
// second. Here one small statement with synchronous_commit off carries the
// wake-ups of everything that committed meanwhile.
//
// NOTIFY is only a wake-up (invariant 3): one lost to a crash between the
// commit and the send costs a poll interval, never work, and subscribers
// read events by seq from the table.
type wakeups struct {
	s      *Store
	origin string // marks this store's task_ready payloads

	mu      sync.Mutex
	pending map[string][]string // channel → payloads
	sending bool
	sent    chan struct{} // closed when the batch holding pending is sent
	ready   map[int]func(requeue bool)
	readyN  int
}

func newOrigin() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// OnTaskReady calls fn in this process each time this store makes tasks
// claimable (a submit, a finish that requeues), right after the commit and
// before the NOTIFY is sent: a worker pool in the same process claims
// without waiting for the NOTIFY's round trip through the server (about a
// millisecond at the median, several at the tail). fn must not block. The
// returned func stops the calls.
func (s *Store) OnTaskReady(fn func(requeue bool)) (stop func()) {
	w := &s.wake
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ready == nil {
		w.ready = map[int]func(bool){}
	}
	w.readyN++
	id := w.readyN
	w.ready[id] = fn
	return func() {
		w.mu.Lock()
		delete(w.ready, id)
		w.mu.Unlock()
	}
}

// TaskReadyFromElsewhere reads a task_ready payload for a listener that
// also has OnTaskReady: wake says the payload holds a wake-up not already
// delivered in this process (from another process, or sent by SQL), and
// requeue whether one of those says requeue.
func (s *Store) TaskReadyFromElsewhere(payload string) (wake, requeue bool) {
	for part := range strings.SplitSeq(payload, ",") {
		kind, origin, _ := strings.Cut(part, "@")
		if origin == s.wake.origin {
			continue
		}
		wake = true
		requeue = requeue || kind == "requeue"
	}
	return wake, requeue
}

// wake queues notifications and returns a channel closed once they are sent
// (or dropped because the database could not be reached).
func (w *wakeups) wake(notes ...[2]string) <-chan struct{} {
	w.mu.Lock()
	if w.pending == nil {
		w.pending = map[string][]string{}
	}
	if w.sent == nil {
		w.sent = make(chan struct{})
	}
	ready, requeue := false, false
	for _, n := range notes {
		if n[0] == channelTaskReady {
			ready, requeue = true, requeue || n[1] == "requeue"
			n[1] += "@" + w.origin
		}
		w.pending[n[0]] = append(w.pending[n[0]], n[1])
	}
	sent := w.sent
	if !w.sending {
		w.sending = true
		go w.drain()
	}
	var local []func(bool)
	if ready {
		for _, fn := range w.ready {
			local = append(local, fn)
		}
	}
	w.mu.Unlock()
	for _, fn := range local {
		fn(requeue)
	}
	return sent
}

// drain sends batches until nothing is pending; whatever queues up while one
// batch is on the wire goes into the next.
func (w *wakeups) drain() {
	for {
		w.mu.Lock()
		batch, sent := w.pending, w.sent
		w.pending, w.sent = nil, nil
		if len(batch) == 0 {
			w.sending = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		channels, payloads := notifyRows(batch)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		// set_config(…, true) lasts until this statement's own commit: the
		// wake-up need not wait for a disk flush.
		_, _ = w.s.pool.Exec(ctx, `SELECT set_config('synchronous_commit', 'off', true), count(pg_notify(c, p))
			FROM unnest($1::text[], $2::text[]) AS n(c, p)`, channels, payloads)
		cancel()
		close(sent)
	}
}

// notifyRows merges each channel's payloads into as few notifications as
// the payload limit allows (comma-separated; each distinct payload once).
func notifyRows(batch map[string][]string) (channels, payloads []string) {
	for ch, ps := range batch {
		var b strings.Builder
		empty := false
		seen := make(map[string]bool, len(ps))
		for _, p := range ps {
			if p == "" {
				empty = true
				continue
			}
			if seen[p] {
				continue
			}
			seen[p] = true
			if b.Len() > 0 && b.Len()+1+len(p) > maxNotifyPayload {
				channels, payloads = append(channels, ch), append(payloads, b.String())
				b.Reset()
			}
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(p)
		}
		if b.Len() > 0 {
			channels, payloads = append(channels, ch), append(payloads, b.String())
		} else if empty {
			channels, payloads = append(channels, ch), append(payloads, "")
		}
	}
	return channels, payloads
}

// eventsNote says taskID has events up to seq.
func eventsNote(taskID string, seq int) [2]string {
	return [2]string{channelTaskEvents, taskID + ":" + strconv.Itoa(seq)}
}

var (
	readyNote   = [2]string{channelTaskReady, ""}
	requeueNote = [2]string{channelTaskReady, "requeue"}
)
