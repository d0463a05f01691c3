package saga_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/action"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// A deploy submitted as every submit stores one (saga.NewDeploy) has its
// step rows and idempotency keys stored with it, so its first action
// starts with nothing written since the claim; a task without stored
// steps (submitted before they were) first writes its keys (invariant 4).
// The background flush is an hour here, so any write before the action
// is the one that stores keys.
func TestSubmittedStepsStartWithoutAWrite(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	rec := newRecorder()
	p := &pipeline.Pipeline{Name: "one", Steps: []pipeline.Step{{Name: "a", Action: "test.do", With: map[string]any{"to": "{{ .task.team }}/{{ .task.id }}"}}}}
	catalog, err := pipeline.NewCatalog(p)
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := saga.NewRunner(saga.Config{Catalog: catalog, Logger: logger, FlushInterval: time.Hour,
		Actions: action.Registry{"test.do": rec.action("do")}})
	pool := queue.New(st, map[task.Kind]queue.Handler{task.KindDeploy: runner}, queue.Config{
		Workers: 2, Lease: 10 * time.Second, PollInterval: 20 * time.Millisecond, Logger: logger})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = pool.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	release := make(chan struct{})
	rec.block["do:a"] = release

	params, ferr := p.Validate(json.RawMessage(`{}`))
	require.Nil(t, ferr)
	in := store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Priority: task.PriorityNormal, MaxAttempts: 5}
	require.NoError(t, saga.NewDeploy(&in, p, params, "acme"))
	require.Len(t, in.Steps, 1)
	submitted, _, err := st.TaskInsert(t.Context(), in)
	require.NoError(t, err)
	require.Equal(t, in.ID, submitted.ID)
	stored, err := st.StepList(t.Context(), submitted.ID)
	require.NoError(t, err)
	require.Len(t, stored, 1)
	require.Equal(t, task.StepPending, stored[0].State)

	require.Equal(t, "do:a", <-rec.started)
	tk, err := st.TaskGet(t.Context(), u.TeamIDs(), submitted.ID)
	require.NoError(t, err)
	require.Equal(t, 1, tk.LastSeq, "only the submit's event is written when the first action starts (the claim writes none)")
	release <- struct{}{}
	waitState(t, st, u, submitted.ID, task.StateCompleted)
	rec.mu.Lock()
	require.Equal(t, []string{stored[0].IdempotencyKey}, rec.keys["do:a"], "the action gets the key stored at submit")
	rec.mu.Unlock()

	// Without stored steps the run stores its keys before the action.
	legacy := testfactory.Task(t, st, u, &testfactory.TaskOpts{Pipeline: "one"})
	require.Equal(t, "do:a", <-rec.started)
	early, err := st.StepList(t.Context(), legacy.ID)
	require.NoError(t, err)
	require.Len(t, early, 1, "a run that makes step rows writes them before its first action")
	require.NotEmpty(t, early[0].IdempotencyKey)
	release <- struct{}{}
	waitState(t, st, u, legacy.ID, task.StateCompleted)
	rows, err := st.StepList(t.Context(), legacy.ID)
	require.NoError(t, err)
	rec.mu.Lock()
	require.Equal(t, rows[0].IdempotencyKey, rec.keys["do:a"][1])
	rec.mu.Unlock()
}

func waitState(t *testing.T, st *store.Store, u *auth.User, id string, want task.State) {
	t.Helper()
	require.Eventually(t, func() bool {
		tk, err := st.TaskGet(context.Background(), u.TeamIDs(), id)
		return err == nil && tk.State == want
	}, 30*time.Second, 10*time.Millisecond, "task never reached %s", want)
}
