package saga_test

import (
	"context"
	"encoding/json"
	"errors"
	"flightdeck/internal/notify"
	"fmt"
	"log/slog"
	"maps"
	"slices"
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

// recorder is a fake world: actions append what they did, and can be told
// to fail or block.
type recorder struct {
	mu      sync.Mutex
	calls   []string            // "do:a", "undo:a"
	keys    map[string][]string // step → idempotency keys seen
	fail    map[string]int      // action call → failures left (-1: always)
	block   map[string]chan struct{}
	started chan string
	params  map[string]map[string]any // test.echo: step → the params it got
}

func newRecorder() *recorder {
	return &recorder{keys: map[string][]string{}, fail: map[string]int{}, block: map[string]chan struct{}{}, started: make(chan string, 100)}
}

func (r *recorder) action(verb string) action.Action {
	return action.Func(func(ctx context.Context, in action.Input) (json.RawMessage, error) {
		name := verb + ":" + in.Step
		r.mu.Lock()
		r.keys[name] = append(r.keys[name], in.IdempotencyKey)
		block := r.block[name]
		r.mu.Unlock()
		r.started <- name
		in.Log("working on " + name)
		if block != nil {
			select {
			case <-block:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if n := r.fail[name]; n != 0 {
			if n > 0 {
				r.fail[name] = n - 1
			}
			return nil, fmt.Errorf("%s broke", name)
		}
		r.calls = append(r.calls, name)
		return json.RawMessage(fmt.Sprintf(`{"did":%q}`, name)), nil
	})
}

// echo records the params its step got and logs each of them, secrets
// included, as a careless script would.
func (r *recorder) echo() action.Action {
	return action.Func(func(ctx context.Context, in action.Input) (json.RawMessage, error) {
		r.mu.Lock()
		if r.params == nil {
			r.params = map[string]map[string]any{}
		}
		r.params[in.Step] = in.Params
		r.mu.Unlock()
		for _, k := range slices.Sorted(maps.Keys(in.Params)) {
			line := fmt.Sprintf("%s=%v", k, in.Params[k])
			in.Log(line)
			_, _ = fmt.Fprintln(in.Output, line)
		}
		return json.RawMessage(`{}`), nil
	})
}

// leak is an action that quotes its secret the way real ones do: in its
// output, or (with with.fail) in its error, like an http step whose URL
// carries credentials.
func leak() action.Action {
	return action.Func(func(ctx context.Context, in action.Input) (json.RawMessage, error) {
		pw, _ := in.Params["pw"].(string)
		if in.With["fail"] == true {
			return nil, fmt.Errorf("GET https://deploy:%s@registry.test/v2/ failed: 401", pw)
		}
		return json.Marshal(map[string]string{"token": pw})
	})
}

func (r *recorder) paramsOf(step string) map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.params[step]
}

func (r *recorder) done() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func step(name string) pipeline.Step {
	return pipeline.Step{Name: name, Action: "test.do", Compensate: &pipeline.Compensation{Action: "test.undo", Retries: 1}}
}

type testBundle struct {
	st       *store.Store
	catalog  *pipeline.Catalog
	rec      *recorder
	creator  *auth.User
	approver *auth.User
}

func setup(t *testing.T, pipelines ...*pipeline.Pipeline) *testBundle {
	t.Helper()
	return setupWith(t, nil, pipelines...)
}

// setupWith is setup with more actions than the recorder's.
func setupWith(t *testing.T, more action.Registry, pipelines ...*pipeline.Pipeline) *testBundle {
	t.Helper()
	return setupConfig(t, more, nil, pipelines...)
}

// setupConfig is setupWith with the runner's config changed by tweak.
func setupConfig(t *testing.T, more action.Registry, tweak func(*saga.Config), pipelines ...*pipeline.Pipeline) *testBundle {
	t.Helper()
	st := dbtest.Store(t)
	rec := newRecorder()
	catalog, err := pipeline.NewCatalog(pipelines...)
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	actions := action.Registry{"test.do": rec.action("do"), "test.undo": rec.action("undo"), "test.echo": rec.echo(), "test.leak": leak()}
	maps.Copy(actions, more)
	cfg := saga.Config{Catalog: catalog, Logger: logger, RetryBase: time.Millisecond, FlushInterval: 10 * time.Millisecond,
		Actions: actions}
	if tweak != nil {
		tweak(&cfg)
	}
	runner := saga.NewRunner(cfg)
	n := notify.NewListener(st, nil)
	p := queue.New(st, map[task.Kind]queue.Handler{task.KindDeploy: runner}, queue.Config{
		Workers: 4, Lease: 2 * time.Second, PollInterval: 20 * time.Millisecond, RescueInterval: 50 * time.Millisecond, Logger: logger,
	})
	p.Attach(n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(ctx) })
	wg.Go(func() { _ = p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return &testBundle{st: st, rec: rec, catalog: catalog,
		creator:  testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer),
		approver: testfactory.User(t, st, "boss@acme.test", "acme", auth.RoleApprover)}
}

// submit submits a deploy of the pipeline without params as every submit
// does (saga.NewDeploy: its step rows stored with it).
func (b *testBundle) submit(t *testing.T, pipelineName string) *task.Task {
	t.Helper()
	p, ok := b.catalog.Get(pipelineName)
	require.True(t, ok, pipelineName)
	params, ferr := p.Validate(json.RawMessage(`{}`))
	require.Nil(t, ferr)
	in := store.TaskInsertParams{TeamID: b.creator.Memberships[0].TeamID, CreatedByID: b.creator.ID,
		Priority: task.PriorityNormal, MaxAttempts: 5}
	require.NoError(t, saga.NewDeploy(&in, p, params, b.creator.Memberships[0].Team))
	tk, _, err := b.st.TaskInsert(t.Context(), in)
	require.NoError(t, err)
	return tk
}

func (b *testBundle) wait(t *testing.T, id string, want task.State) *task.Task {
	t.Helper()
	var got *task.Task
	require.Eventually(t, func() bool {
		tk, err := b.st.TaskGet(context.Background(), b.creator.TeamIDs(), id)
		got = tk
		return err == nil && tk.State == want
	}, 30*time.Second, 10*time.Millisecond, "task never reached %s", want)
	return got
}

func (b *testBundle) steps(t *testing.T, id string) map[string]string {
	rows, err := b.st.StepList(t.Context(), id)
	require.NoError(t, err)
	out := map[string]string{}
	for _, r := range rows {
		out[r.Name] = string(r.State)
	}
	return out
}

func (b *testBundle) seqsGapFree(t *testing.T, id string) []task.Event {
	evs, err := b.st.EventList(t.Context(), b.creator.TeamIDs(), id, 0, 0)
	require.NoError(t, err)
	for i, e := range evs {
		require.Equal(t, i+1, e.Seq)
	}
	require.True(t, evs[len(evs)-1].Type.Terminal() || true)
	return evs
}

func threeSteps(name string) *pipeline.Pipeline {
	return &pipeline.Pipeline{Name: name, Steps: []pipeline.Step{step("a"), step("b"), step("c")}}
}

func TestSuccessPath(t *testing.T) {
	t.Parallel()
	b := setup(t, threeSteps("three"))
	tk := b.submit(t, "three")
	got := b.wait(t, tk.ID, task.StateCompleted)
	require.Equal(t, []string{"do:a", "do:b", "do:c"}, b.rec.done())
	require.Equal(t, map[string]string{"a": "completed", "b": "completed", "c": "completed"}, b.steps(t, tk.ID))
	require.Equal(t, task.Progress{Step: 3, TotalStep: 3, Percent: 100}, got.Progress)
	require.JSONEq(t, `{"steps":{"a":{"did":"do:a"},"b":{"did":"do:b"},"c":{"did":"do:c"}}}`, string(got.Result))
	evs := b.seqsGapFree(t, tk.ID)
	require.Equal(t, task.EventTaskCompleted, evs[len(evs)-1].Type)
	var types []task.EventType
	for _, e := range evs {
		types = append(types, e.Type)
	}
	require.Contains(t, types, task.EventStepLog)
	require.Contains(t, types, task.EventToolExecuted)
}

func TestFailureCompensatesInReverse(t *testing.T) {
	t.Parallel()
	b := setup(t, threeSteps("three"))
	b.rec.fail["do:c"] = -1
	tk := b.submit(t, "three")
	got := b.wait(t, tk.ID, task.StateFailed)
	require.Equal(t, []string{"do:a", "do:b", "undo:b", "undo:a"}, b.rec.done())
	require.Equal(t, map[string]string{"a": "compensated", "b": "compensated", "c": "failed"}, b.steps(t, tk.ID))
	require.Contains(t, *got.Error, "do:c broke")
	evs := b.seqsGapFree(t, tk.ID)
	require.Equal(t, task.EventTaskFailed, evs[len(evs)-1].Type)
}

func TestRetryKeepsTheKey(t *testing.T) {
	t.Parallel()
	p := &pipeline.Pipeline{Name: "flaky", Steps: []pipeline.Step{{Name: "a", Action: "test.do", Retries: 2}}}
	b := setup(t, p)
	b.rec.fail["do:a"] = 2
	tk := b.submit(t, "flaky")
	b.wait(t, tk.ID, task.StateCompleted)
	keys := b.rec.keys["do:a"]
	require.Len(t, keys, 3)
	require.Equal(t, keys[0], keys[1])
	require.Equal(t, keys[0], keys[2])
	rows, err := b.st.StepList(t.Context(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, 3, rows[0].Attempt)
	require.Equal(t, rows[0].IdempotencyKey, keys[0])
}

// TestStepsNeverRunAreSkipped: a saga that turns to undoing records the
// steps it will never run as skipped (contract §2), not pending.
func TestStepsNeverRunAreSkipped(t *testing.T) {
	t.Parallel()
	p := &pipeline.Pipeline{Name: "four", Steps: []pipeline.Step{step("a"), step("b"), step("c"), step("d")}}
	b := setup(t, p)
	b.rec.fail["do:b"] = -1
	tk := b.submit(t, "four")
	b.wait(t, tk.ID, task.StateFailed)
	require.Equal(t, map[string]string{"a": "compensated", "b": "failed", "c": "skipped", "d": "skipped"}, b.steps(t, tk.ID))
	require.Equal(t, []string{"do:a", "undo:a"}, b.rec.done())
}

// TestRetriesSayWhatComesNext: a retry's event says which attempt of how
// many comes when, and the step's started_at is its first attempt's, so
// its duration spans the retries.
func TestRetriesSayWhatComesNext(t *testing.T) {
	t.Parallel()
	p := &pipeline.Pipeline{Name: "flaky", Steps: []pipeline.Step{{Name: "a", Action: "test.do", Retries: 3}}}
	b := setup(t, p)
	b.rec.fail["do:a"] = 2
	tk := b.submit(t, "flaky")
	b.wait(t, tk.ID, task.StateCompleted)
	evs := b.seqsGapFree(t, tk.ID)
	var retries []map[string]any
	var firstStart, firstRetry time.Time
	for _, e := range evs {
		switch e.Type {
		case task.EventStepRetrying:
			if firstRetry.IsZero() {
				firstRetry = e.Time
			}
			var d map[string]any
			require.NoError(t, json.Unmarshal(e.Data, &d))
			retries = append(retries, d)
			at, err := time.Parse(time.RFC3339Nano, d["next_attempt_at"].(string))
			require.NoError(t, err)
			require.WithinDuration(t, e.Time, at, 5*time.Second)
		case task.EventStepStarted:
			if firstStart.IsZero() {
				firstStart = e.Time
			}
		}
	}
	require.Len(t, retries, 2)
	for i, d := range retries {
		require.EqualValues(t, i+1, d["attempt"])
		require.EqualValues(t, i+2, d["next_attempt"])
		require.EqualValues(t, 4, d["max_attempts"])
	}
	rows, err := b.st.StepList(t.Context(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, 3, rows[0].Attempt)
	require.NotNil(t, rows[0].StartedAt)
	// The worker's time of the first attempt's start: no later than that
	// start's event was written, and before the first retry.
	require.False(t, rows[0].StartedAt.After(firstStart), "started_at %s is after the first start's write %s", rows[0].StartedAt, firstStart)
	require.True(t, rows[0].StartedAt.Before(firstRetry), "started_at %s is the first attempt's, before the retry at %s", rows[0].StartedAt, firstRetry)
}

func TestCancelDuringAStepCompensates(t *testing.T) {
	t.Parallel()
	b := setup(t, threeSteps("three"))
	b.rec.block["do:b"] = make(chan struct{}) // never released
	tk := b.submit(t, "three")
	for name := range b.rec.started {
		if name == "do:b" {
			break
		}
	}
	_, err := b.st.TaskCancel(t.Context(), b.creator.TeamIDs(), tk.ID, "dev@acme.test")
	require.NoError(t, err)
	b.wait(t, tk.ID, task.StateCancelled)
	require.Equal(t, []string{"do:a", "undo:a"}, b.rec.done())
	require.Equal(t, map[string]string{"a": "compensated", "b": "cancelled", "c": "skipped"}, b.steps(t, tk.ID))
}

func TestFailingCompensationNeedsAttention(t *testing.T) {
	t.Parallel()
	b := setup(t, threeSteps("three"))
	b.rec.fail["do:c"] = -1
	b.rec.fail["undo:a"] = 2 // two tries (1 + 1 retry) fail
	tk := b.submit(t, "three")
	got := b.wait(t, tk.ID, task.StateNeedsAttention)
	require.Contains(t, *got.Error, "a compensation failed")
	require.Equal(t, "compensation_failed", b.steps(t, tk.ID)["a"])

	admin := testfactory.User(t, b.st, "root@acme.test", "acme", auth.RoleAdmin)
	_, err := b.st.TaskResolve(t.Context(), admin.TeamIDs(), tk.ID, "retry", admin.Email, "fixed the DNS API")
	require.NoError(t, err)
	b.wait(t, tk.ID, task.StateFailed)
	require.Equal(t, "compensated", b.steps(t, tk.ID)["a"])
	require.Equal(t, []string{"do:a", "do:b", "undo:b", "undo:a"}, b.rec.done())
}

func TestApproval(t *testing.T) {
	t.Parallel()
	p := &pipeline.Pipeline{Name: "risky", Steps: []pipeline.Step{step("a"),
		{Name: "b", Action: "test.do", Approval: &pipeline.Approval{Roles: []string{"approver", "admin"}, Timeout: time.Hour}}}}
	b := setup(t, p)
	tk := b.submit(t, "risky")
	b.wait(t, tk.ID, task.StateAwaitingApproval)
	aps, err := b.st.ApprovalList(t.Context(), b.creator.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Len(t, aps, 1)
	decide := func(u *auth.User, approve bool) error {
		_, err := b.st.ApprovalDecide(t.Context(), store.ApprovalDecideParams{TeamIDs: u.TeamIDs(), TaskID: tk.ID, ApprovalID: aps[0].ID,
			Approve: approve, ActorID: u.ID, Actor: u.Email, ActorRole: string(u.Memberships[0].Role)})
		return err
	}
	require.ErrorIs(t, decide(b.creator, true), store.ErrForbidden, "four eyes")

	// 100 approvers racing: exactly one decision.
	var wg sync.WaitGroup
	var okCount, conflicts int
	var mu sync.Mutex
	for range 100 {
		wg.Go(func() {
			err := decide(b.approver, true)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				okCount++
			case errors.Is(err, store.ErrConflict):
				conflicts++
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, okCount)
	require.Equal(t, 99, conflicts)
	b.wait(t, tk.ID, task.StateCompleted)
	require.Equal(t, []string{"do:a", "do:b"}, b.rec.done())
	require.ErrorIs(t, decide(b.approver, false), store.ErrConflict, "already decided")
}

func TestRejectedApprovalCancelsAfterCompensation(t *testing.T) {
	t.Parallel()
	p := &pipeline.Pipeline{Name: "risky", Steps: []pipeline.Step{step("a"), {Name: "b", Action: "test.do", Approval: &pipeline.Approval{Roles: []string{"approver"}}}}}
	b := setup(t, p)
	tk := b.submit(t, "risky")
	b.wait(t, tk.ID, task.StateAwaitingApproval)
	aps, err := b.st.ApprovalList(t.Context(), b.creator.TeamIDs(), tk.ID)
	require.NoError(t, err)
	_, err = b.st.ApprovalDecide(t.Context(), store.ApprovalDecideParams{TeamIDs: b.approver.TeamIDs(), TaskID: tk.ID, ApprovalID: aps[0].ID,
		Approve: false, ActorID: b.approver.ID, Actor: b.approver.Email, ActorRole: "approver", Comment: "not on a Friday"})
	require.NoError(t, err)
	got := b.wait(t, tk.ID, task.StateCancelled)
	require.Contains(t, *got.Error, "rejected by boss@acme.test: not on a Friday")
	require.Equal(t, []string{"do:a", "undo:a"}, b.rec.done())
}

// TestCancelWhileWaitingCancelsTheApproval: the approval of a task
// cancelled while it waits reads cancelled (nobody let it expire), and the
// step it held was never run: skipped.
func TestCancelWhileWaitingCancelsTheApproval(t *testing.T) {
	t.Parallel()
	p := &pipeline.Pipeline{Name: "risky", Steps: []pipeline.Step{step("a"), {Name: "b", Action: "test.do", Approval: &pipeline.Approval{Roles: []string{"approver"}}}}}
	b := setup(t, p)
	tk := b.submit(t, "risky")
	b.wait(t, tk.ID, task.StateAwaitingApproval)
	_, err := b.st.TaskCancel(t.Context(), b.creator.TeamIDs(), tk.ID, "dev@acme.test")
	require.NoError(t, err)
	b.wait(t, tk.ID, task.StateCancelled)
	aps, err := b.st.ApprovalList(t.Context(), b.creator.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Len(t, aps, 1)
	require.Equal(t, task.ApprovalCancelled, aps[0].State)
	require.Equal(t, map[string]string{"a": "compensated", "b": "skipped"}, b.steps(t, tk.ID))
}

func TestApprovalTimeoutRejects(t *testing.T) {
	t.Parallel()
	p := &pipeline.Pipeline{Name: "risky", Steps: []pipeline.Step{step("a"), {Name: "b", Action: "test.do", Approval: &pipeline.Approval{Roles: []string{"approver"}, Timeout: 50 * time.Millisecond}}}}
	b := setup(t, p)
	tk := b.submit(t, "risky")
	got := b.wait(t, tk.ID, task.StateCancelled)
	require.Contains(t, *got.Error, "approval of b expired")
	require.Equal(t, []string{"do:a", "undo:a"}, b.rec.done())
}

func TestParallelJoins(t *testing.T) {
	t.Parallel()
	group := func(name, join string, quorum int) *pipeline.Pipeline {
		return &pipeline.Pipeline{Name: name, Steps: []pipeline.Step{step("first"), {Name: "g", Parallel: &pipeline.Group{Join: join, Quorum: quorum,
			Steps: []pipeline.Step{step("x"), step("y"), step("z")}}}}}
	}
	t.Run("All", func(t *testing.T) {
		t.Parallel()
		b := setup(t, group("all", "all", 0))
		tk := b.submit(t, "all")
		b.wait(t, tk.ID, task.StateCompleted)
		require.ElementsMatch(t, []string{"do:first", "do:x", "do:y", "do:z"}, b.rec.done())
	})
	t.Run("AllFailsWhenOneFails", func(t *testing.T) {
		t.Parallel()
		b := setup(t, group("all", "all", 0))
		b.rec.fail["do:y"] = -1
		tk := b.submit(t, "all")
		b.wait(t, tk.ID, task.StateFailed)
		for _, c := range b.rec.done() {
			if c[:3] == "do:" && c != "do:first" {
				require.Contains(t, b.rec.done(), "undo:"+c[3:], "completed group steps are undone")
			}
		}
		require.Equal(t, "undo:first", b.rec.done()[len(b.rec.done())-1], "the step before the group is undone last")
	})
	t.Run("AnyCancelsAndCompensatesLosers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, group("any", "any", 0))
		b.rec.block["do:y"] = make(chan struct{})
		b.rec.block["do:z"] = make(chan struct{})
		tk := b.submit(t, "any")
		b.wait(t, tk.ID, task.StateCompleted)
		st := b.steps(t, tk.ID)
		require.Equal(t, "completed", st["x"])
		require.Equal(t, "cancelled", st["y"])
		require.Equal(t, "cancelled", st["z"])
	})
	t.Run("Quorum", func(t *testing.T) {
		t.Parallel()
		b := setup(t, group("quorum", "quorum", 2))
		b.rec.fail["do:z"] = -1
		tk := b.submit(t, "quorum")
		b.wait(t, tk.ID, task.StateCompleted)
		st := b.steps(t, tk.ID)
		require.Equal(t, "completed", st["x"])
		require.Equal(t, "completed", st["y"])
	})
}

// TestKeysAreStoredBeforeAnyAction: by the time a step's action runs, its
// row with its key (and every other row) is stored; the steps' progress
// rides with the next write or the background flush, and the task's
// record ends the same as if every change had been written on its own.
func TestKeysAreStoredBeforeAnyAction(t *testing.T) {
	t.Parallel()
	p := &pipeline.Pipeline{Name: "mixed", Steps: []pipeline.Step{
		{Name: "warm", Action: "noop"}, step("effect"), {Name: "cool", Action: "noop"},
	}}
	b := setup(t, p)
	b.rec.block["do:effect"] = make(chan struct{})
	tk := b.submit(t, "mixed")
	require.Equal(t, "do:effect", <-b.rec.started)

	rows, err := b.st.StepList(t.Context(), tk.ID)
	require.NoError(t, err)
	require.Len(t, rows, 3, "every row, with its key, is stored before the effect runs")
	// The background flush brings the stored progress up to date while
	// the effect runs.
	require.Eventually(t, func() bool {
		rows, err = b.st.StepList(t.Context(), tk.ID)
		return err == nil && rows[0].State == "completed" && rows[1].State == "running"
	}, 20*time.Second, 5*time.Millisecond)
	require.Equal(t, 1, rows[1].Attempt)
	b.rec.mu.Lock()
	require.Equal(t, []string{rows[1].IdempotencyKey}, b.rec.keys["do:effect"])
	b.rec.mu.Unlock()
	require.Equal(t, task.StepPending, rows[2].State)

	close(b.rec.block["do:effect"])
	got := b.wait(t, tk.ID, task.StateCompleted)
	require.Equal(t, task.Progress{Step: 3, TotalStep: 3, Percent: 100}, got.Progress)
	rows, err = b.st.StepList(t.Context(), tk.ID)
	require.NoError(t, err)
	for _, r := range rows {
		require.Equal(t, task.StepCompleted, r.State, r.Name)
		require.Equal(t, 1, r.Attempt, r.Name)
		require.NotNil(t, r.StartedAt, r.Name)
		require.NotNil(t, r.FinishedAt, r.Name)
	}
	evs := b.seqsGapFree(t, tk.ID)
	var seen []string
	for _, e := range evs {
		if e.Type == task.EventStepStarted || e.Type == task.EventStepCompleted {
			seen = append(seen, string(e.Type)+":"+e.StepName)
		}
	}
	require.Equal(t, []string{"step.started:warm", "step.completed:warm", "step.started:effect", "step.completed:effect",
		"step.started:cool", "step.completed:cool"}, seen)
	require.Equal(t, task.EventTaskCompleted, evs[len(evs)-1].Type)
}

// TestFastRunWritesOncePerStepBoundary: a submitted run whose steps finish
// quickly writes once where one step ends and the next begins (the end is
// stored before the next action runs, contract §2 "Resuming") and once
// with its outcome, whatever the steps' actions: its step rows and keys
// were stored at submit, so the first step starts without a write.
func TestFastRunWritesOncePerStepBoundary(t *testing.T) {
	t.Parallel()
	instant := &pipeline.Pipeline{Name: "instant", Steps: []pipeline.Step{{Name: "one", Action: "noop"}, {Name: "two", Action: "noop"}}}
	catalog, err := pipeline.NewCatalog(instant)
	require.NoError(t, err)
	b := &testBundle{st: dbtest.Store(t), rec: newRecorder(), catalog: catalog}
	b.creator = testfactory.User(t, b.st, "dev@acme.test", "acme", auth.RoleDeployer)
	startSagaPool(t, b.st, b.rec, "fast", time.Minute, instant)
	tk := b.submit(t, "instant")
	got := b.wait(t, tk.ID, task.StateCompleted)
	require.Equal(t, 1, got.Attempt)
	require.Equal(t, task.Progress{Step: 2, TotalStep: 2, Percent: 100}, got.Progress)
	rows, err := b.st.StepList(t.Context(), tk.ID)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	for _, r := range rows {
		require.Equal(t, task.StepCompleted, r.State, r.Name)
		require.Equal(t, 1, r.Attempt, r.Name)
		require.NotNil(t, r.StartedAt, r.Name)
		require.NotNil(t, r.FinishedAt, r.Name)
		require.NotEmpty(t, r.IdempotencyKey, r.Name)
		require.False(t, r.FinishedAt.Before(*r.StartedAt), r.Name)
	}
	// The times are when the steps ran, not the one write's: one after
	// the other, not all the same instant.
	require.False(t, rows[1].StartedAt.Before(*rows[0].FinishedAt))
	require.True(t, rows[0].StartedAt.Before(*rows[1].FinishedAt), "%v … %v", rows[0].StartedAt, rows[1].FinishedAt)
	evs := b.seqsGapFree(t, tk.ID)
	require.Equal(t, "Picked up by a worker", evs[1].Message)
	require.Equal(t, task.EventTaskCompleted, evs[len(evs)-1].Type)
	var batches int
	require.NoError(t, b.st.Pool().QueryRow(t.Context(), `SELECT count(*) FROM task_event_batches WHERE task_id = $1`, tk.ID).Scan(&batches))
	require.Equal(t, 3, batches, "the submit's, one with the pick-up, step one's end and step two's start, and the outcome")
}
