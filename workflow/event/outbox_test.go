package event_test

import (
	"context"
	"errors"
	"flightdeck/internal/notify"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/event"
	"flightdeck/workflow/task"
)

// TestConsumer: a durable consumer gets every event of its types once
// handled, again after a failed Handle (at least once), and resumes after a
// restart from its stored cursor without repeating what it handled.
func TestConsumer(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	hub := notify.NewHub()

	var mu sync.Mutex
	handled := map[string]int{}
	failOnce := true
	got := make(chan struct{}, 100)
	consumer := event.Consumer{
		Name: "test", Types: []task.EventType{task.EventTaskState}, Poll: 10 * time.Millisecond,
		Handle: func(_ context.Context, evs []store.OutboxEvent) error {
			mu.Lock()
			defer mu.Unlock()
			if failOnce {
				failOnce = false
				return errors.New("transient")
			}
			for _, e := range evs {
				require.Equal(t, task.EventTaskState, e.Type)
				handled[e.TaskID]++
			}
			got <- struct{}{}
			return nil
		},
	}
	run := func() func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = event.RunConsumer(ctx, st, hub, consumer); close(done) }()
		return func() { cancel(); <-done }
	}
	// The cursor starts when the consumer first reads.
	_, err := st.OutboxRead(t.Context(), "test", nil, 1)
	require.NoError(t, err)
	stop := run()
	first := testfactory.Task(t, st, u, nil)
	hub.Publish(first.ID)
	waitHandled := func(id string) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			mu.Lock()
			n := handled[id]
			mu.Unlock()
			if n > 0 {
				return
			}
			select {
			case <-got:
			case <-deadline:
				t.Fatalf("event of %s never handled", id)
			}
		}
	}
	waitHandled(first.ID)
	stop()

	second := testfactory.Task(t, st, u, nil)
	stop = run()
	defer stop()
	waitHandled(second.ID)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, handled[first.ID], "not repeated after the restart")
	require.Equal(t, 1, handled[second.ID])
	require.False(t, failOnce, "the failed batch was handed over again")
}
