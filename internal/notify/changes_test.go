package notify

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChanges(t *testing.T) {
	t.Parallel()

	t.Run("CoalescesKeepingOrderAndHighestSeq", func(t *testing.T) {
		t.Parallel()
		h := NewHub()
		c := h.SubscribeChanges()
		defer c.Close()
		h.notify(`{"tasks":[{"id":"a","seq":1},{"id":"b","seq":4}]}`)
		h.notify(`{"tasks":[{"id":"a","seq":3}]}`)
		h.notify(`{"tasks":[{"id":"a","seq":2},{"id":"c","seq":0}]}`)
		h.Publish("d")
		<-c.C
		require.Equal(t, []Change{{"a", 3}, {"b", 4}, {"c", 0}, {"d", 0}}, c.Take())
		require.Empty(t, c.Take())
		select {
		case <-c.C:
			t.Fatal("no wake-up without a change")
		default:
		}
	})
	t.Run("RequeueMergesWithNewChanges", func(t *testing.T) {
		t.Parallel()
		h := NewHub()
		c := h.SubscribeChanges()
		defer c.Close()
		h.notify(`{"tasks":[{"id":"a","seq":1}]}`)
		taken := c.Take()
		h.notify(`{"tasks":[{"id":"b","seq":2},{"id":"a","seq":5}]}`)
		c.Requeue(taken)
		require.Equal(t, []Change{{"b", 2}, {"a", 5}}, c.Take())
	})
	t.Run("AttachedHubTakesOnlyNotifications", func(t *testing.T) {
		t.Parallel()
		h := NewHub()
		h.Attach(NewListener(nil, nil))
		c := h.SubscribeChanges()
		defer c.Close()
		h.Publish("a")
		require.Empty(t, c.Take(), "the notification that follows a Publish is enough")
		h.notify(`{"tasks":[{"id":"a","seq":2}]}`)
		require.Equal(t, []Change{{"a", 2}}, c.Take())
	})
	t.Run("ClosedSetGetsNothing", func(t *testing.T) {
		t.Parallel()
		h := NewHub()
		c := h.SubscribeChanges()
		c.Close()
		h.notify(`{"tasks":[{"id":"a","seq":1}]}`)
		require.Empty(t, c.Take())
	})
	t.Run("FullSetDropsAndSaysSo", func(t *testing.T) {
		t.Parallel()
		h := NewHub()
		c := h.SubscribeChanges()
		defer c.Close()
		cs := make([]Change, ChangesMax+1)
		for i := range cs {
			cs[i] = Change{TaskID: strconv.Itoa(i)}
		}
		h.publish(cs, nil, true)
		require.True(t, c.Overflowed())
		require.False(t, c.Overflowed())
		require.Len(t, c.Take(), ChangesMax)
	})
}
