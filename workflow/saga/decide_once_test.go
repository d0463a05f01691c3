package saga_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/notify"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/action"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

const decideOncePipeline = `name: svc
params:
  - {name: app, type: string, required: true}
  - {name: version, type: string, required: true}
  - {name: env, type: enum, values: [staging, production], default: staging}
steps:
  - {name: one, action: noop}
  - name: two
    action: noop
    approval: {roles: [approver]}
  - name: three
    action: noop
    approval: {roles: [deployer], when: '{{ eq .params.env "production" }}'}
`

// TestReviewersDecideACoveredStepApproval: people decide a production
// deploy once (contract §9). After the environment's two reviewers
// approve, the step approval whose roles are among theirs is recorded
// approved by them, with an event, and the run goes through it without
// asking again; the step approval that asks another role still asks.
func TestReviewersDecideACoveredStepApproval(t *testing.T) {
	t.Parallel()
	b := setupProtect(t)
	ctx := t.Context()
	pl, err := pipeline.Parse("svc.yaml", []byte(decideOncePipeline))
	require.NoError(t, err)
	rules, err := pipeline.ParseEnvironments("environments.yaml", []byte(`environments:
  production:
    reviewers: {count: 2, roles: [approver, admin]}
`))
	require.NoError(t, err)
	catalog, err := pipeline.NewCatalog(pl)
	require.NoError(t, err)
	catalog.SetEnvironments(rules)
	b.pl, b.rules = pl, rules

	tk, err := b.submit(t, b.dev, map[string]any{"app": "shop", "version": "1.0.0", "env": "production"}, saga.Protection{})
	require.NoError(t, err)
	require.Equal(t, task.StateAwaitingApproval, tk.State)
	aps, err := b.st.ApprovalList(ctx, b.dev.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Len(t, aps, 1)
	env := aps[0]
	require.Contains(t, string(env.Detail), `"covers": [{"idx": 2, "name": "two"`, "the run page can say from the start which step approvals the reviewers decide")

	rec := newRecorder()
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := saga.NewRunner(saga.Config{Catalog: catalog, Logger: logger, FlushInterval: 10 * time.Millisecond,
		Actions: action.Registry{"noop": rec.action("do")}})
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

	for _, u := range []struct {
		id, email, role string
	}{{b.approver.ID, b.approver.Email, "approver"}, {b.admin.ID, b.admin.Email, "admin"}} {
		_, err := b.st.ApprovalDecide(ctx, store.ApprovalDecideParams{TeamIDs: b.dev.TeamIDs(), TaskID: tk.ID, ApprovalID: env.ID,
			Approve: true, ActorID: u.id, Actor: u.email, ActorRole: u.role})
		require.NoError(t, err)
	}

	// The run asks only for three's approval (deployer: not a reviewer's role).
	var three *store.Approval
	require.Eventually(t, func() bool {
		aps, err = b.st.ApprovalList(ctx, b.dev.TeamIDs(), tk.ID)
		if err != nil {
			return false
		}
		for i := range aps {
			if aps[i].Step == "three" && aps[i].State == task.ApprovalPending {
				three = &aps[i]
			}
		}
		return three != nil
	}, 30*time.Second, 10*time.Millisecond, "the run did not ask for step three's approval")
	var two *store.Approval
	for i := range aps {
		if aps[i].Step == "two" {
			two = &aps[i]
		}
	}
	require.NotNil(t, two, "step two's approval is recorded")
	require.Equal(t, task.ApprovalApproved, two.State)
	require.Equal(t, string(task.ApprovalStep), two.Kind)
	require.Len(t, two.Decisions, 2)
	require.Equal(t, b.approver.Email, two.Decisions[0].By)
	require.Equal(t, b.admin.Email, two.Decisions[1].By)
	require.Equal(t, []string{"do:one", "do:two"}, rec.done(), "two ran without a second round")
	evs, err := b.st.EventsAfter(ctx, tk.ID, 0, 1000)
	require.NoError(t, err)
	var covered bool
	for _, e := range evs {
		covered = covered || e.Type == task.EventApprovalDecided && e.StepName == "two"
	}
	require.True(t, covered, "an event says two's approval was decided by the reviewers")

	// three's own approver: any deployer but the creator
	dev2 := testfactory.User(t, b.st, "dev2@acme.test", "acme", auth.RoleDeployer)
	_, err = b.st.ApprovalDecide(ctx, store.ApprovalDecideParams{TeamIDs: b.dev.TeamIDs(), TaskID: tk.ID, ApprovalID: three.ID,
		Approve: true, ActorID: dev2.ID, Actor: dev2.Email, ActorRole: "deployer"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := b.st.TaskGet(ctx, b.dev.TeamIDs(), tk.ID)
		return err == nil && got.State == task.StateCompleted
	}, 30*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"do:one", "do:two", "do:three"}, rec.done())
}
