package notify

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A hub that follows a bus wakes the streams of a task, and feeds the change
// sets with its seq, as soon as this process sends the task's events, before
// any NOTIFY; after stop it no longer does.
func TestHubFollowsBus(t *testing.T) {
	t.Parallel()
	bus := NewBus(func(context.Context, []string, []string) error { return nil })
	h := NewHub()
	stop := h.Follow(bus)
	sub := h.Subscribe("t1")
	defer sub.Close()
	other := h.Subscribe("t2")
	defer other.Close()
	changes := h.SubscribeChanges()
	defer changes.Close()

	bus.Send(Notes{Events: []TaskSeq{{ID: "t1", Seq: 4}}})
	select {
	case <-sub.C:
	default:
		t.Fatal("t1's stream was not woken by the send")
	}
	select {
	case <-other.C:
		t.Fatal("t2's stream was woken by t1's events")
	default:
	}
	require.Equal(t, []Change{{TaskID: "t1", Seq: 4}}, changes.Take())

	stop()
	bus.Send(Notes{Events: []TaskSeq{{ID: "t1", Seq: 5}}})
	select {
	case <-sub.C:
		t.Fatal("woken after stop")
	default:
	}
}

// With a Listener attached, what the process sends wakes its streams but
// reaches the change sets once, by the NOTIFY: a reader does not load a
// task twice for one write.
func TestHubFollowingAndAttachedFeedsChangesOnce(t *testing.T) {
	t.Parallel()
	bus := NewBus(func(context.Context, []string, []string) error { return nil })
	h := NewHub()
	h.Attach(NewListener(nil, nil))
	defer h.Follow(bus)()
	sub := h.Subscribe("t1")
	defer sub.Close()
	changes := h.SubscribeChanges()
	defer changes.Close()

	bus.Send(Notes{Events: []TaskSeq{{ID: "t1", Seq: 4}}})
	select {
	case <-sub.C:
	default:
		t.Fatal("t1's stream was not woken by the send")
	}
	require.Empty(t, changes.Take(), "the change sets wait for the NOTIFY")
	h.notify(`{"tasks":[{"id":"t1","seq":4}]}`)
	require.Equal(t, []Change{{TaskID: "t1", Seq: 4}}, changes.Take())
}
