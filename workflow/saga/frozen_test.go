package saga_test

import (
	"context"
	"flightdeck/internal/notify"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/store"
	"flightdeck/workflow/action"
	"flightdeck/workflow/environment"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// A deploy that waits while its environment is frozen never starts its
// first step: its worker parks it, scheduled for the freeze's end and
// holding no worker; ending the freeze lets it run.
func TestAWaitingDeployIsHeldByAFreeze(t *testing.T) {
	t.Parallel()
	b := setupProtect(t)
	ctx := t.Context()
	rec := newRecorder()
	catalog := b.catalogWith(t)

	tk, err := b.submit(t, b.dev, map[string]any{"app": "shop", "version": "1", "env": "quiet"}, saga.Protection{})
	require.NoError(t, err)
	require.Equal(t, task.StatePending, tk.State)
	// and one asked to run at a time that comes inside the freeze
	runAt := time.Now().Add(300 * time.Millisecond).UTC().Truncate(time.Microsecond)
	later, err := b.submit(t, b.dev, map[string]any{"app": "cart", "version": "1", "env": "quiet"}, saga.Protection{RunAt: &runAt})
	require.NoError(t, err)
	require.Equal(t, task.StateScheduled, later.State)
	// The freeze starts while the deploy waits in the queue.
	f, err := b.st.FreezeCreate(ctx, store.FreezeCreateParams{TeamID: b.admin.Memberships[0].TeamID, Environment: "quiet",
		Until: time.Now().Add(time.Hour), Reason: "incident 9", Actor: b.admin.Email})
	require.NoError(t, err)

	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := saga.NewRunner(saga.Config{Catalog: catalog, Logger: logger, FlushInterval: 10 * time.Millisecond,
		Actions: action.Registry{"noop": rec.action("do")},
		Freezes: func(ctx context.Context, teamID, env string, at time.Time) ([]environment.Span, error) {
			return saga.APIFreezes(ctx, b.st, teamID, env, at)
		}})
	n := notify.NewListener(b.st, nil)
	p := queue.New(b.st, map[task.Kind]queue.Handler{task.KindDeploy: runner}, queue.Config{
		Workers: 2, Lease: 2 * time.Second, PollInterval: 20 * time.Millisecond, RescueInterval: 50 * time.Millisecond, Logger: logger,
	})
	p.Attach(n)
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(runCtx) })
	wg.Go(func() { _ = p.Run(runCtx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	var got *task.Task
	require.Eventually(t, func() bool {
		got, err = b.st.TaskGet(ctx, b.dev.TeamIDs(), tk.ID)
		return err == nil && got.State == task.StateScheduled
	}, 30*time.Second, 10*time.Millisecond, "the worker did not park the frozen deploy")
	// held, not started, and not asked to run at the freeze's end: its
	// JSON says so apart (issue 38, item 6)
	require.Nil(t, got.RunAt, "a hold is not a run_at")
	require.Nil(t, got.StartedAt, "a held task started no step")
	held, err := saga.Held(ctx, b.st, catalog.Environments(), got, time.Now())
	require.NoError(t, err)
	require.NotNil(t, held)
	require.True(t, f.Until.Equal(held.Until), "it waits for the freeze's end")
	var gotLater *task.Task
	require.Eventually(t, func() bool {
		gotLater, err = b.st.TaskGet(ctx, b.dev.TeamIDs(), later.ID)
		if err != nil || gotLater.State != task.StateScheduled {
			return false
		}
		evs, err := b.st.EventsAfter(ctx, later.ID, 0, 1000)
		return err == nil && slices.ContainsFunc(evs, func(e task.Event) bool { return strings.HasPrefix(e.Message, "Held:") })
	}, 30*time.Second, 10*time.Millisecond, "the worker did not hold the scheduled deploy when its time came")
	require.NotNil(t, gotLater.RunAt)
	require.True(t, runAt.Equal(*gotLater.RunAt), "its run_at stays %s, got %s", runAt, gotLater.RunAt)
	require.Nil(t, gotLater.StartedAt)
	require.Empty(t, rec.done(), "no step ran inside the freeze")
	steps, err := b.st.TaskSteps(ctx, b.dev.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, "pending", steps[0].State)

	_, err = b.st.FreezeEnd(ctx, b.admin.TeamIDs(), f.ID, b.admin.Email)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err = b.st.TaskGet(ctx, b.dev.TeamIDs(), tk.ID)
		if err != nil || got.State != task.StateCompleted {
			return false
		}
		gotLater, err = b.st.TaskGet(ctx, b.dev.TeamIDs(), later.ID)
		return err == nil && gotLater.State == task.StateCompleted
	}, 30*time.Second, 10*time.Millisecond, "the deploys did not go on when the freeze ended")
	require.Equal(t, []string{"do:one", "do:one"}, rec.done())
}
