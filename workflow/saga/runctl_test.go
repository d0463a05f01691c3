package saga_test

import (
	"context"
	"errors"
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

// asking is three steps under on_failure: ask.
func asking(name string, timeout time.Duration) *pipeline.Pipeline {
	p := threeSteps(name)
	p.OnFailure, p.DecisionTimeout = pipeline.OnFailureAsk, timeout
	return p
}

func (b *testBundle) resume(t *testing.T, u *auth.User, id string, action task.ResumeAction, comment string) (*task.Task, error) {
	t.Helper()
	return b.st.TaskResume(t.Context(), store.TaskResumeParams{TeamIDs: u.TeamIDs(), ID: id, Action: action, Comment: comment,
		ActorID: u.ID, Actor: u.Email, ActorRole: string(u.RoleIn(u.Memberships[0].TeamID))})
}

func eventTypes(evs []task.Event) []task.EventType {
	var out []task.EventType
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// A running task asked to pause finishes the step it is in, then parks
// paused holding no worker; resume goes on at the next step.
func TestPauseParksBetweenSteps(t *testing.T) {
	t.Parallel()
	b := setup(t, threeSteps("three"))
	b.rec.block["do:b"] = make(chan struct{})
	tk := b.submit(t, "three")
	for s := range b.rec.started {
		if s == "do:b" {
			break
		}
	}
	got, err := b.st.TaskPause(t.Context(), b.creator.TeamIDs(), tk.ID, b.creator.Email)
	require.NoError(t, err)
	require.Equal(t, task.StateRunning, got.State)
	require.True(t, got.PauseRequested)
	_, err = b.st.TaskPause(t.Context(), b.creator.TeamIDs(), tk.ID, b.creator.Email)
	require.ErrorIs(t, err, store.ErrConflict, "asked once")
	close(b.rec.block["do:b"])

	got = b.wait(t, tk.ID, task.StatePaused)
	require.False(t, got.PauseRequested)
	require.Nil(t, got.FailedStep)
	require.Equal(t, map[string]string{"a": "completed", "b": "completed", "c": "pending"}, b.steps(t, tk.ID))
	var owner *string
	require.NoError(t, b.st.Pool().QueryRow(t.Context(), `SELECT lease_owner FROM tasks WHERE id = $1`, tk.ID).Scan(&owner))
	require.Nil(t, owner, "a paused task holds no worker")

	_, err = b.resume(t, b.creator, tk.ID, task.ResumeRetry, "")
	require.ErrorIs(t, err, store.ErrConflict, "no step failed: nothing to retry")
	_, err = b.resume(t, b.creator, tk.ID, "", "")
	require.NoError(t, err)
	b.wait(t, tk.ID, task.StateCompleted)
	require.Equal(t, []string{"do:a", "do:b", "do:c"}, b.rec.done())
	evs := b.seqsGapFree(t, tk.ID)
	types := eventTypes(evs)
	require.Contains(t, types, task.EventTaskPaused)
	require.Contains(t, types, task.EventTaskResumed)
	for _, e := range evs {
		if e.Type == task.EventTaskResumed {
			require.JSONEq(t, `{"action":"continue","by":"dev@acme.test"}`, string(e.Data))
		}
	}
	var audits int
	require.NoError(t, b.st.Pool().QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE target = $1 AND action IN ('task.paused', 'task.resumed')`, tk.ID).Scan(&audits))
	require.Equal(t, 2, audits)
}

// A paused task may be cancelled: its completed steps are undone.
func TestCancelWhilePausedCompensates(t *testing.T) {
	t.Parallel()
	b := setup(t, asking("ask", time.Hour))
	b.rec.fail["do:b"] = -1
	tk := b.submit(t, "ask")
	b.wait(t, tk.ID, task.StatePaused)
	_, err := b.st.TaskCancel(t.Context(), b.creator.TeamIDs(), tk.ID, b.creator.Email)
	require.NoError(t, err)
	got := b.wait(t, tk.ID, task.StateCancelled)
	require.Nil(t, got.FailedStep)
	require.Equal(t, []string{"do:a", "undo:a"}, b.rec.done())
}

// Guided failure: a failed step parks the task with failed_step and a
// deadline; retry runs the step's next attempt under the same key.
func TestGuidedFailureRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, asking("ask", time.Hour))
	b.rec.fail["do:b"] = 1
	tk := b.submit(t, "ask")
	got := b.wait(t, tk.ID, task.StatePaused)
	require.NotNil(t, got.FailedStep)
	require.Equal(t, task.FailedStep{Index: 2, Name: "b", Error: "do:b broke", Attempt: 1}, *got.FailedStep)
	require.NotNil(t, got.DecisionExpiresAt)
	require.WithinDuration(t, time.Now().Add(time.Hour), *got.DecisionExpiresAt, time.Minute)
	require.Equal(t, map[string]string{"a": "completed", "b": "failed", "c": "pending"}, b.steps(t, tk.ID))

	_, err := b.resume(t, b.creator, tk.ID, task.ResumeContinue, "")
	require.ErrorIs(t, err, store.ErrConflict, "a failed step needs a decision")
	got, err = b.resume(t, b.creator, tk.ID, task.ResumeRetry, "")
	require.NoError(t, err)
	require.Nil(t, got.FailedStep)
	require.Nil(t, got.DecisionExpiresAt)
	b.wait(t, tk.ID, task.StateCompleted)
	require.Equal(t, []string{"do:a", "do:b", "do:c"}, b.rec.done())
	keys := b.rec.keys["do:b"]
	require.Len(t, keys, 2)
	require.Equal(t, keys[0], keys[1], "the retry keeps the step's idempotency key")
	rows, err := b.st.StepList(t.Context(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, 2, rows[1].Attempt)
}

// Skip is an approver's (never the creator's) with a reason; the skipped
// step is never compensated, even when a later step's failure rolls back.
func TestGuidedFailureSkip(t *testing.T) {
	t.Parallel()
	b := setup(t, asking("ask", time.Hour))
	b.rec.fail["do:b"] = -1
	b.rec.fail["do:c"] = -1
	tk := b.submit(t, "ask")
	b.wait(t, tk.ID, task.StatePaused)

	_, err := b.resume(t, b.creator, tk.ID, task.ResumeSkip, "the creator would like to skip it")
	require.ErrorIs(t, err, store.ErrForbidden, "four eyes")
	_, err = b.resume(t, b.approver, tk.ID, task.ResumeSkip, "flaky")
	require.ErrorIs(t, err, store.ErrInvalid, "a reason of 10 characters")
	_, err = b.resume(t, b.approver, tk.ID, task.ResumeSkip, "known flaky smoke test")
	require.NoError(t, err)

	got := b.wait(t, tk.ID, task.StatePaused) // c fails next
	require.Equal(t, "c", got.FailedStep.Name)
	require.Equal(t, "skipped", b.steps(t, tk.ID)["b"])
	_, err = b.resume(t, b.creator, tk.ID, task.ResumeRollback, "")
	require.NoError(t, err)
	got = b.wait(t, tk.ID, task.StateFailed)
	require.Contains(t, *got.Error, "rolled back by dev@acme.test")
	require.Equal(t, []string{"do:a", "undo:a"}, b.rec.done(), "b was skipped: its undo never runs")
	require.Equal(t, map[string]string{"a": "compensated", "b": "skipped", "c": "failed"}, b.steps(t, tk.ID))
	var skips int
	require.NoError(t, b.st.Pool().QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE target = $1 AND action = 'step.skipped'`, tk.ID).Scan(&skips))
	require.Equal(t, 1, skips)
}

// Undecided past decision_timeout, the task rolls back on its own.
func TestGuidedFailureDecisionTimesOut(t *testing.T) {
	t.Parallel()
	b := setup(t, asking("ask", 200*time.Millisecond))
	b.rec.fail["do:b"] = -1
	tk := b.submit(t, "ask")
	got := b.wait(t, tk.ID, task.StateFailed)
	require.Contains(t, *got.Error, "no decision by")
	require.Equal(t, []string{"do:a", "undo:a"}, b.rec.done())
	evs := b.seqsGapFree(t, tk.ID)
	require.Contains(t, eventTypes(evs), task.EventTaskPaused)
	require.Contains(t, eventTypes(evs), task.EventTaskResumed)
}

// Two people deciding at once: exactly one decision is recorded, the
// other is told it came too late.
func TestTwoDecisionsAtOnceRecordOne(t *testing.T) {
	t.Parallel()
	b := setup(t, asking("ask", time.Hour))
	for range 5 {
		b.rec.mu.Lock()
		b.rec.fail["do:b"] = 1
		b.rec.mu.Unlock()
		tk := b.submit(t, "ask")
		b.wait(t, tk.ID, task.StatePaused)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		wg.Go(func() { <-start; _, errs[0] = b.resume(t, b.creator, tk.ID, task.ResumeRollback, "") })
		wg.Go(func() { <-start; _, errs[1] = b.resume(t, b.approver, tk.ID, task.ResumeRetry, "") })
		close(start)
		wg.Wait()
		require.True(t, (errs[0] == nil) != (errs[1] == nil), "exactly one wins: %v", errs)
		for _, err := range errs {
			if err != nil {
				// too late: the task left paused, or already ended
				require.True(t, errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrTerminal), err)
			}
		}
		var resumed int
		evs := b.seqsGapFree(t, tk.ID)
		for _, e := range evs {
			if e.Type == task.EventTaskResumed {
				resumed++
			}
		}
		require.Equal(t, 1, resumed)
		var audits int
		require.NoError(t, b.st.Pool().QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE target = $1 AND action = 'task.resumed'`, tk.ID).Scan(&audits))
		require.Equal(t, 1, audits)
		want := task.StateCompleted // the retry won
		if errs[0] == nil {
			want = task.StateFailed
		}
		b.wait(t, tk.ID, want)
	}
}

// TestCancelRightAfterARetryWins: a person retries a failed step and
// cancels a moment later, when a worker has just claimed the task and the
// cancel's notification does not reach it (this pool listens to none, and
// its lease is long, so no heartbeat tells it either). The step fails
// again; the cancel still wins: the task compensates and ends cancelled
// instead of parking paused with the cancel standing (issue 34 item 5).
func TestCancelRightAfterARetryWins(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	rec := newRecorder()
	p := asking("ask-cancel", time.Hour)
	catalog, err := pipeline.NewCatalog(p)
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := saga.NewRunner(saga.Config{Catalog: catalog, Logger: logger, RetryBase: time.Millisecond, FlushInterval: time.Hour,
		Actions: action.Registry{"test.do": rec.action("do"), "test.undo": rec.action("undo")}})
	pool := queue.New(st, map[task.Kind]queue.Handler{task.KindDeploy: runner}, queue.Config{
		Workers: 4, Lease: time.Minute, PollInterval: 20 * time.Millisecond, RescueInterval: 50 * time.Millisecond, Logger: logger})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = pool.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	b := &testBundle{st: st, rec: rec, catalog: catalog,
		creator: testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)}

	rec.mu.Lock()
	rec.fail["do:b"] = -1
	rec.mu.Unlock()
	tk := b.submit(t, "ask-cancel")
	b.wait(t, tk.ID, task.StatePaused)

	for len(rec.started) > 0 {
		<-rec.started // the first run's starts
	}
	again := make(chan struct{})
	rec.mu.Lock()
	rec.block["do:b"] = again
	rec.mu.Unlock()
	_, err = b.resume(t, b.creator, tk.ID, task.ResumeRetry, "")
	require.NoError(t, err)
	for s := range rec.started {
		if s == "do:b" {
			break
		}
	}
	got, err := st.TaskCancel(t.Context(), b.creator.TeamIDs(), tk.ID, b.creator.Email)
	require.NoError(t, err)
	require.Equal(t, task.StateRunning, got.State)
	close(again)

	got = b.wait(t, tk.ID, task.StateCancelled)
	require.False(t, got.CancelRequested && got.State == task.StatePaused)
	require.Contains(t, rec.done(), "undo:a", "the completed step was undone")
	b.seqsGapFree(t, tk.ID)
}
