package store_test

import (
	"testing"
	"time"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// BenchmarkClaimFinish measures one batch claim of 100 tasks plus their batch
// finish (with a terminal event each): the queue's hot path. ns/op is per
// task.
func BenchmarkClaimFinish(b *testing.B) {
	st := dbtest.Store(b)
	u := testfactory.User(b, st, "bench@bench.test", "bench", auth.RoleDeployer)
	const batch = 100
	if err := st.TaskInsertMany(b.Context(), u.Memberships[0].TeamID, u.ID, task.KindDeploy, "noop", b.N+batch); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for done := 0; done < b.N; {
		claimed, err := st.TaskClaim(b.Context(), "bench", batch, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		fs := make([]store.Finish, len(claimed))
		for i, t := range claimed {
			fs[i] = store.Finish{ID: t.ID, Token: t.LeaseToken, State: task.StateCompleted,
				Events: []task.Event{{Type: task.EventTaskCompleted, Status: task.StatusCompleted, Message: "done"}}}
		}
		if _, err := st.TaskFinish(b.Context(), fs); err != nil {
			b.Fatal(err)
		}
		done += len(claimed)
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
		if err := st.EventAppend(b.Context(), claimed[0].ID, claimed[0].LeaseToken, ev); err != nil {
			b.Fatal(err)
		}
	}
}
