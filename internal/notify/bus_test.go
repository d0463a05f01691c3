package notify

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

type recorder struct {
	mu    sync.Mutex
	notes map[Topic][]string
}

func (r *recorder) send(_ context.Context, topics, payloads []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, t := range topics {
		r.notes[Topic(t)] = append(r.notes[Topic(t)], payloads[i])
	}
	return nil
}

// The bus wakes this process's subscribers at once, sends each topic's
// wake-ups as JSON that another process reads (and this one recognises as
// its own), keeps each task's latest seq, and stays under NOTIFY's size
// limit.
func TestBus(t *testing.T) {
	r := &recorder{notes: map[Topic][]string{}}
	b := NewBus(r.send)
	other := NewBus(r.send)
	local := make(chan struct{}, 10)
	stop := b.OnReady(func() { local <- struct{}{} })

	var events []TaskSeq
	for i := range 400 {
		events = append(events, TaskSeq{ID: strings.Repeat("x", 30) + string(rune('a'+i%26)) + json.Number(rune('0'+i/26)).String(), Seq: i})
	}
	events = append(events, TaskSeq{ID: events[0].ID, Seq: 9999})
	<-b.Send(Notes{Ready: true, Events: events, Cancel: []string{"t2", "t1", "t2"}})
	<-local

	r.mu.Lock()
	require.Len(t, r.notes[TaskReady], 1)
	require.False(t, DecodeReady(r.notes[TaskReady][0], b.Origin()), "its own bus woke this process already")
	require.True(t, DecodeReady(r.notes[TaskReady][0], other.Origin()))
	require.True(t, DecodeReady("garbage", b.Origin()), "unreadable: wake anyway")
	seen := map[string]int{}
	for _, p := range r.notes[TaskEvents] {
		require.Less(t, len(p), 8000)
		for _, ts := range DecodeEvents(p) {
			seen[ts.ID] = ts.Seq
		}
	}
	require.Len(t, seen, 400)
	require.Equal(t, 9999, seen[events[0].ID], "the latest seq")
	require.Greater(t, len(r.notes[TaskEvents]), 1, "split under the limit")
	require.Equal(t, [][]string{{"t1", "t2"}}, [][]string{DecodeCancel(r.notes[TaskCancel][0])})
	r.mu.Unlock()

	stop()
	<-b.Send(Notes{Ready: true})
	select {
	case <-local:
		t.Fatal("woken after stop")
	default:
	}
	select {
	case <-b.Send(Notes{}):
	default:
		t.Fatal("nothing to send is sent at once")
	}
}
