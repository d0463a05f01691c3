package store_test

import (
	"fmt"
	"testing"
	"time"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// BenchmarkClaimFinish measures the queue's hot path as the noop pipeline
// walks it: a batch claim, a batch of step starts (the step row and its
// step.started event), then a batch of outcomes carrying the step's end and
// three events (tool.executed, step.completed, task.completed). ns/op is
// per task; the sub-benchmarks vary the batch.
func BenchmarkClaimFinish(b *testing.B) {
	for _, batch := range []int{10, 25, 50, 100, 150} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			st := dbtest.Store(b)
			u := testfactory.User(b, st, "bench@bench.test", "bench", auth.RoleDeployer)
			if err := st.TaskInsertMany(b.Context(), u.Memberships[0].TeamID, u.ID, task.KindDeploy, "noop", b.N+batch, nil); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for done := 0; done < b.N; {
				claimed, err := st.TaskClaim(b.Context(), "bench", batch, time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				now := time.Now()
				starts := make([]store.TaskWrite, len(claimed))
				fs := make([]store.TaskWrite, len(claimed))
				for i, c := range claimed {
					t := c.Task
					starts[i] = store.TaskWrite{ID: t.ID, Token: t.LeaseToken,
						Steps: []store.StepSave{{Idx: 1, Name: "noop", IdempotencyKey: t.ID + ":1", State: "running", Attempt: 1, StartedAt: &now}},
						Events: []task.Event{
							{Type: task.EventStepStarted, Status: task.StatusToolCall, Step: 1, TotalStep: 1, Message: "Step 1/1 noop started (attempt 1)", Data: []byte(`{"attempt":1}`)},
						}}
					fs[i] = store.TaskWrite{ID: t.ID, Token: t.LeaseToken, State: task.StateCompleted, Release: true,
						Steps: []store.StepSave{{Idx: 1, Name: "noop", IdempotencyKey: t.ID + ":1", State: "completed", Attempt: 1,
							Output: []byte(`{}`), FinishedAt: &now}},
						Events: []task.Event{
							{Type: task.EventToolExecuted, Status: task.StatusToolResult, Step: 1, TotalStep: 1, Message: "noop finished: ok", Data: []byte(`{"tool":"noop","duration_ms":0,"outcome":"ok","compensating":false}`)},
							{Type: task.EventStepCompleted, Status: task.StatusToolResult, Step: 1, TotalStep: 1, Message: "Step 1/1 noop completed"},
							{Type: task.EventTaskCompleted, Status: task.StatusCompleted, Message: "Task completed"},
						}}
				}
				if _, err := st.TaskWrites(b.Context(), starts); err != nil {
					b.Fatal(err)
				}
				if _, err := st.TaskWrites(b.Context(), fs); err != nil {
					b.Fatal(err)
				}
				done += len(claimed)
			}
		})
	}
}

// BenchmarkEventAppend measures a worker appending one progress event under
// its lease (the step.log path).
func BenchmarkEventAppend(b *testing.B) {
	st := dbtest.Store(b)
	u := testfactory.User(b, st, "bench@bench.test", "bench", auth.RoleDeployer)
	testfactory.Task(b, st, u, nil)
	claimed, err := st.TaskClaim(b.Context(), "bench", 1, time.Hour)
	if err != nil || len(claimed) != 1 {
		b.Fatal(err)
	}
	ev := []task.Event{{Type: task.EventStepLog, Status: task.StatusLog, Step: 1, TotalStep: 1, Message: "a line of output"}}
	b.ResetTimer()
	for range b.N {
		if err := st.EventAppend(b.Context(), claimed[0].Task.ID, claimed[0].Task.LeaseToken, ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTaskPreviousDeploys measures what the approvals inbox reads for
// a page of 100 deploys on 20 targets with ten completed deploys each:
// ns/op is one page, asked one deploy at a time (as the inbox did) or all
// at once.
func BenchmarkTaskPreviousDeploys(b *testing.B) {
	ctx := b.Context()
	st := dbtest.Store(b)
	u := testfactory.User(b, st, "bench@bench.test", "bench", auth.RoleDeployer)
	team := u.Memberships[0].TeamID
	var qs []store.PreviousDeployQuery
	for i := range 200 {
		key := fmt.Sprintf(`{"app":"app%d","env":"staging"}`, i%20)
		if _, _, err := st.TaskInsert(ctx, store.TaskInsertParams{TeamID: team, CreatedByID: u.ID, Kind: task.KindDeploy,
			Pipeline: "web", Params: []byte(`{}`), Priority: task.PriorityNormal, TargetKey: key}); err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			qs = append(qs, store.PreviousDeployQuery{TeamID: team, Pipeline: "web", TargetKey: key, TaskID: store.NewTaskID(), Before: time.Now().Add(time.Hour)})
		}
	}
	claimed, err := st.TaskClaim(ctx, "bench", 200, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	done := make([]store.TaskWrite, len(claimed))
	for i, c := range claimed {
		done[i] = store.TaskWrite{ID: c.Task.ID, Token: c.Task.LeaseToken, State: task.StateCompleted, Release: true}
	}
	if _, err := st.TaskWrites(ctx, done); err != nil {
		b.Fatal(err)
	}
	// With statistics, as a live database has them, the planner walks
	// the target's index of completed deploys (without, a team's).
	if _, err := st.Pool().Exec(ctx, `ANALYZE tasks`); err != nil {
		b.Fatal(err)
	}
	b.Run("one-per-item", func(b *testing.B) {
		for b.Loop() {
			for _, q := range qs {
				if _, err := st.TaskPreviousDeploy(ctx, q.TeamID, q.Pipeline, q.TargetKey, q.TaskID, q.Before); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("batch", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.TaskPreviousDeploys(ctx, qs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
