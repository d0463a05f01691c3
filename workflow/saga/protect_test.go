package saga_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/environment"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

const protectedPipeline = `name: svc
params:
  - {name: app, type: string, required: true}
  - {name: version, type: string, required: true}
  - {name: env, type: enum, values: [staging, production, frozen-env, quiet], default: staging}
  - {name: token, type: string, secret: true}
steps:
  - {name: one, action: noop}
`

const protectedRules = `environments:
  staging:
    promote_to: production
  production:
    reviewers: {count: 2, roles: [approver, admin], timeout: 1h}
    wait: 10m
    versions: '^[0-9]+\.[0-9]+\.[0-9]+$'
    requires: {env: staging, soak: 30m}
  frozen-env:
    freeze:
      - {from: "00:00", to: "23:59", tz: UTC, reason: "always, nearly"}
`

type protectBundle struct {
	st                              *store.Store
	pl                              *pipeline.Pipeline
	rules                           *environment.Rules
	dev, approver, admin, approver2 *auth.User
	rival                           *auth.User
}

func setupProtect(t *testing.T) *protectBundle {
	t.Helper()
	st := dbtest.Store(t)
	pl, err := pipeline.Parse("svc.yaml", []byte(protectedPipeline))
	require.NoError(t, err)
	_, err = pipeline.NewCatalog(pl) // compiles the params' patterns
	require.NoError(t, err)
	rules, err := pipeline.ParseEnvironments("environments.yaml", []byte(protectedRules))
	require.NoError(t, err)
	b := &protectBundle{st: st, pl: pl, rules: rules,
		dev:      testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer),
		approver: testfactory.User(t, st, "approver@acme.test", "acme", auth.RoleApprover),
		admin:    testfactory.User(t, st, "admin@acme.test", "acme", auth.RoleAdmin),
		rival:    testfactory.User(t, st, "boss@rival.test", "rival", auth.RoleAdmin),
	}
	b.approver2 = testfactory.User(t, st, "approver2@acme.test", "acme", auth.RoleApprover)
	return b
}

// catalogWith is a catalog of svc with the bundle's rules, for a runner.
func (b *protectBundle) catalogWith(t *testing.T) *pipeline.Catalog {
	t.Helper()
	c, err := pipeline.NewCatalog(b.pl)
	require.NoError(t, err)
	c.SetEnvironments(b.rules)
	return c
}

// submit submits a deploy of svc as u through NewDeploy and ProtectDeploy,
// as every submit path does.
func (b *protectBundle) submit(t *testing.T, u *auth.User, params map[string]any, o saga.Protection) (*task.Task, error) {
	t.Helper()
	o.Rules = b.rules
	o.By = u.Email
	o.MayOverride = u.May(u.Memberships[0].TeamID, task.ActOverride)
	raw, err := json.Marshal(params)
	require.NoError(t, err)
	validated, ferr := b.pl.Validate(raw)
	require.Nil(t, ferr)
	in := store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Priority: task.PriorityNormal, MaxAttempts: 5}
	require.NoError(t, saga.NewDeploy(&in, b.pl, validated, u.Memberships[0].Team))
	if err := saga.ProtectDeploy(t.Context(), b.st, &in, b.pl, validated, o); err != nil {
		return nil, err
	}
	tk, _, err := b.st.TaskInsert(t.Context(), in)
	require.NoError(t, err)
	return tk, nil
}

func refusal(t *testing.T, err error) *saga.Refusal {
	t.Helper()
	var r *saga.Refusal
	require.True(t, errors.As(err, &r), "want a refusal, got %v", err)
	return r
}

func TestProtectDeployRefusesWhatTheRulesForbid(t *testing.T) {
	t.Parallel()
	b := setupProtect(t)

	_, err := b.submit(t, b.dev, map[string]any{"app": "shop", "version": "latest", "env": "production"}, saga.Protection{})
	r := refusal(t, err)
	require.Equal(t, "invalid", r.Code)
	require.Equal(t, "params.version", r.Field)
	require.NotContains(t, r.Message, "^") // an example, not the pattern
	require.Contains(t, r.Message, "a version like 1.2.3")

	_, err = b.submit(t, b.dev, map[string]any{"app": "shop", "version": "1.2.3", "env": "production"}, saga.Protection{})
	r = refusal(t, err)
	require.Equal(t, "not_promoted", r.Code)
	require.Contains(t, r.Message, "never")

	// In staging it completes; the soak has not passed yet.
	staged, err := b.submit(t, b.dev, map[string]any{"app": "shop", "version": "1.2.3", "env": "staging"}, saga.Protection{})
	require.NoError(t, err)
	require.Equal(t, task.StatePending, staged.State)
	testfactory.Completed(t, b.st, staged.ID)
	_, err = b.submit(t, b.dev, map[string]any{"app": "shop", "version": "1.2.3", "env": "production"}, saga.Protection{})
	r = refusal(t, err)
	require.Equal(t, "not_promoted", r.Code)
	require.Contains(t, r.Message, "soak")
	require.NotRegexp(t, `\d+m\d+s|\d{4}-\d\d-\d\dT`, r.Message) // no Go duration, no RFC 3339
	// Another app's staging deploy does not count, nor does another team's.
	_, err = b.submit(t, b.dev, map[string]any{"app": "cart", "version": "1.2.3", "env": "production"}, saga.Protection{})
	require.Equal(t, "not_promoted", refusal(t, err).Code)
	_, err = b.submit(t, b.rival, map[string]any{"app": "shop", "version": "1.2.3", "env": "production"}, saga.Protection{})
	require.Contains(t, refusal(t, err).Message, "never")

	// Frozen: 409 frozen with the time to wait.
	_, err = b.submit(t, b.dev, map[string]any{"app": "shop", "version": "1", "env": "frozen-env"}, saga.Protection{})
	r = refusal(t, err)
	now := time.Now()
	if _, frozen := b.rules.Get("frozen-env").Frozen(nil, now); frozen {
		require.Equal(t, "frozen", r.Code)
		require.Contains(t, r.Message, "always, nearly")
		require.Positive(t, r.RetryAfter)
	}

	// run_at in the past or too far ahead
	past := now.Add(-time.Minute)
	_, err = b.submit(t, b.dev, map[string]any{"app": "shop", "version": "1", "env": "quiet"}, saga.Protection{RunAt: &past})
	require.Equal(t, "run_at", refusal(t, err).Field)
	far := now.Add(31 * 24 * time.Hour)
	_, err = b.submit(t, b.dev, map[string]any{"app": "shop", "version": "1", "env": "quiet"}, saga.Protection{RunAt: &far})
	require.Equal(t, "run_at", refusal(t, err).Field)
}

func TestProtectDeployOverrideIsForAdminsWithAReason(t *testing.T) {
	t.Parallel()
	b := setupProtect(t)
	params := map[string]any{"app": "shop", "version": "2.0.0", "env": "production"}
	_, err := b.submit(t, b.approver, params, saga.Protection{Override: "hotfix for incident 42"})
	require.Equal(t, "forbidden", refusal(t, err).Code)
	_, err = b.submit(t, b.admin, params, saga.Protection{Override: "short"})
	require.Equal(t, "override.reason", refusal(t, err).Field)

	// The admin breaks the glass on the gate; the reviewers still apply.
	tk, err := b.submit(t, b.admin, params, saga.Protection{Override: "hotfix for incident 42"})
	require.NoError(t, err)
	require.Equal(t, task.StateAwaitingApproval, tk.State)
	got, err := b.st.TaskGet(t.Context(), b.admin.TeamIDs(), tk.ID)
	require.NoError(t, err)
	var o map[string]any
	require.NoError(t, json.Unmarshal(got.Override, &o))
	require.Equal(t, "hotfix for incident 42", o["reason"])
	require.Equal(t, "admin@acme.test", o["by"])
	require.Equal(t, "production", got.Environment)
	events, err := b.st.EventsAfter(t.Context(), tk.ID, 0, 10)
	require.NoError(t, err)
	require.Equal(t, task.EventTaskOverride, events[1].Type)
	require.Equal(t, task.EventApprovalRequested, events[2].Type)
}

func TestReviewersNOfM(t *testing.T) {
	t.Parallel()
	b := setupProtect(t)
	ctx := t.Context()
	params := map[string]any{"app": "shop", "version": "3.0.0", "env": "production", "token": "s3cret-value"}
	tk, err := b.submit(t, b.admin, params, saga.Protection{Override: "no staging for this one"})
	require.NoError(t, err)
	require.Equal(t, task.StateAwaitingApproval, tk.State)
	aps, err := b.st.ApprovalList(ctx, b.dev.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Len(t, aps, 1)
	a := aps[0]
	require.Equal(t, "environment", a.Kind)
	require.Equal(t, 2, a.Required)
	require.NotNil(t, a.Changes)
	require.Nil(t, a.Changes.From, "nothing deployed to production yet")
	require.Equal(t, "[REDACTED]", a.Changes.To["token"], "secrets redacted")
	require.Contains(t, a.Changes.Fields, "version")

	decide := func(u *auth.User, approve bool, comment string) error {
		_, err := b.st.ApprovalDecide(ctx, store.ApprovalDecideParams{TeamIDs: u.TeamIDs(), TaskID: tk.ID, ApprovalID: a.ID,
			Approve: approve, ActorID: u.ID, Actor: u.Email, ActorRole: string(u.RoleIn(u.Memberships[0].TeamID)), Comment: comment})
		return err
	}
	require.ErrorIs(t, decide(b.admin, true, ""), store.ErrForbidden, "never the creator")
	require.ErrorIs(t, decide(b.dev, true, ""), store.ErrForbidden, "a deployer is not a reviewer")
	require.ErrorIs(t, decide(b.rival, true, ""), store.ErrNotFound, "another team's approval does not exist")
	require.NoError(t, decide(b.approver, true, "looks good"))
	require.ErrorIs(t, decide(b.approver, true, ""), store.ErrConflict, "the same person twice")
	inbox, err := b.st.ApprovalInbox(ctx, b.approver.ID, 10)
	require.NoError(t, err)
	require.Empty(t, inbox, "a reviewer who decided is not asked again")
	inbox, err = b.st.ApprovalInbox(ctx, b.approver2.ID, 10)
	require.NoError(t, err)
	require.Len(t, inbox, 1)
	require.Equal(t, 1, len(inbox[0].Decisions))
	got, err := b.st.TaskGet(ctx, b.dev.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateAwaitingApproval, got.State, "one of two")
	require.NoError(t, decide(b.approver2, true, ""))
	got, err = b.st.TaskGet(ctx, b.dev.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateScheduled, got.State, "the wait timer follows the reviewers")
	require.NotNil(t, got.RunAt)
	require.WithinDuration(t, time.Now().Add(10*time.Minute), *got.RunAt, time.Minute)
	aps, err = b.st.ApprovalList(ctx, b.dev.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.ApprovalApproved, aps[0].State)
	require.Len(t, aps[0].Decisions, 2)
	require.Equal(t, "approver@acme.test", aps[0].Decisions[0].By)
	require.Equal(t, "looks good", aps[0].Decisions[0].Comment)

	// Cancel works while the timer runs: nothing ran.
	got, err = b.st.TaskCancel(ctx, b.dev.TeamIDs(), tk.ID, b.dev.Email)
	require.NoError(t, err)
	require.Equal(t, task.StateCancelled, got.State)

	entries, _, err := b.st.AuditList(ctx, store.AuditListParams{TeamID: b.admin.Memberships[0].TeamID})
	require.NoError(t, err)
	var types []string
	for _, e := range entries {
		types = append(types, e.Type)
		if e.Type != "task.override" {
			require.Equal(t, tk.ID, *e.TaskID)
		}
	}
	require.Equal(t, []string{"task.cancelled", "approval.decided", "approval.decided", "task.override"}, types)
}

func TestReviewerRejectCancelsAtOnce(t *testing.T) {
	t.Parallel()
	b := setupProtect(t)
	ctx := t.Context()
	tk, err := b.submit(t, b.admin, map[string]any{"app": "shop", "version": "3.0.0", "env": "production"},
		saga.Protection{Override: "no staging for this one"})
	require.NoError(t, err)
	aps, err := b.st.ApprovalList(ctx, b.dev.TeamIDs(), tk.ID)
	require.NoError(t, err)
	_, err = b.st.ApprovalDecide(ctx, store.ApprovalDecideParams{TeamIDs: b.approver.TeamIDs(), TaskID: tk.ID, ApprovalID: aps[0].ID,
		Approve: false, ActorID: b.approver.ID, Actor: b.approver.Email, ActorRole: "approver", Comment: "not on a Friday"})
	require.NoError(t, err)
	got, err := b.st.TaskGet(ctx, b.dev.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateCancelled, got.State)
	require.Contains(t, *got.Error, "approver@acme.test")
	require.Contains(t, *got.Error, "not on a Friday")
	steps, err := b.st.TaskSteps(ctx, b.dev.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, "skipped", steps[0].State, "no step ran")
}

func TestScheduledDeployWaitsForRunAt(t *testing.T) {
	t.Parallel()
	b := setupProtect(t)
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	tk, err := b.submit(t, b.dev, map[string]any{"app": "shop", "version": "1", "env": "quiet"}, saga.Protection{RunAt: &at})
	require.NoError(t, err)
	require.Equal(t, task.StateScheduled, tk.State)
	got, err := b.st.TaskGet(t.Context(), b.dev.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.True(t, at.Equal(*got.RunAt))
	claimed, err := b.st.TaskClaim(t.Context(), "w", 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, claimed, "a scheduled task holds no worker")
}

func TestFreezeHoldsAWaitingTaskAndEndingItReleasesIt(t *testing.T) {
	t.Parallel()
	b := setupProtect(t)
	ctx := t.Context()
	tk, err := b.submit(t, b.dev, map[string]any{"app": "shop", "version": "1", "env": "quiet"}, saga.Protection{})
	require.NoError(t, err)

	// The freeze is the team's: another team's admin cannot end it.
	f, err := b.st.FreezeCreate(ctx, store.FreezeCreateParams{TeamID: b.admin.Memberships[0].TeamID, Environment: "quiet",
		Until: time.Now().Add(time.Hour), Reason: "incident 7", Actor: b.admin.Email})
	require.NoError(t, err)
	_, err = b.st.FreezeEnd(ctx, b.rival.TeamIDs(), f.ID, b.rival.Email)
	require.ErrorIs(t, err, store.ErrNotFound)

	got, err := b.st.TaskGet(ctx, b.dev.TeamIDs(), tk.ID)
	require.NoError(t, err)
	held, err := saga.Held(ctx, b.st, b.rules, got, time.Now())
	require.NoError(t, err)
	require.NotNil(t, held)
	require.Equal(t, "frozen", held.Reason)
	require.True(t, f.Until.Equal(held.Until))
	// A submit now is refused; the rival team's deploys are not frozen.
	_, err = b.submit(t, b.dev, map[string]any{"app": "cart", "version": "1", "env": "quiet"}, saga.Protection{})
	require.Equal(t, "frozen", refusal(t, err).Code)
	_, err = b.submit(t, b.rival, map[string]any{"app": "cart", "version": "1", "env": "quiet"}, saga.Protection{})
	require.NoError(t, err)

	ended, err := b.st.FreezeEnd(ctx, b.admin.TeamIDs(), f.ID, b.admin.Email)
	require.NoError(t, err)
	require.False(t, ended.Until.After(time.Now()))
	_, err = b.st.FreezeEnd(ctx, b.admin.TeamIDs(), f.ID, b.admin.Email)
	require.ErrorIs(t, err, store.ErrConflict)
	held, err = saga.Held(ctx, b.st, b.rules, got, time.Now())
	require.NoError(t, err)
	require.Nil(t, held)
	entries, _, err := b.st.AuditList(ctx, store.AuditListParams{TeamID: b.admin.Memberships[0].TeamID, Type: "freeze.ended"})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "admin@acme.test", entries[0].Actor)
	entries, _, err = b.st.AuditList(ctx, store.AuditListParams{TeamID: b.rival.Memberships[0].TeamID})
	require.NoError(t, err)
	require.Empty(t, entries, "another team's audit log")
}

func TestReviewersWhoDoNotDecideInTimeCancelTheDeploy(t *testing.T) {
	t.Parallel()
	b := setupProtect(t)
	ctx := t.Context()
	tk, err := b.submit(t, b.admin, map[string]any{"app": "shop", "version": "3.0.0", "env": "production"},
		saga.Protection{Override: "no staging for this one"})
	require.NoError(t, err)
	testfactory.Fixture(t, b.st.Pool(), `UPDATE approvals SET expires_at = now() - interval '1 second' WHERE task_id = $1`, tk.ID)
	n, err := b.st.ApprovalExpire(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	got, err := b.st.TaskGet(ctx, b.dev.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateCancelled, got.State, "no step ran: nothing to undo")
	require.Contains(t, *got.Error, "did not decide in time")
}
