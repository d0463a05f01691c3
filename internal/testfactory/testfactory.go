// Package testfactory makes fixtures for tests (test-only).
package testfactory

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/internal/auth"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// User creates a user with a role in a team and returns it with memberships.
func User(t testing.TB, st *store.Store, email, team string, role auth.Role) *auth.User {
	t.Helper()
	id, err := st.UserAdd(t.Context(), store.UserAddParams{Email: email, Team: team, Role: role})
	if err != nil {
		t.Fatalf("error creating user: %v", err)
	}
	u, err := st.UserGet(t.Context(), id)
	if err != nil {
		t.Fatalf("error loading user: %v", err)
	}
	return u
}

// TaskOpts tune Task. Zero values: a noop deploy of the user's first team.
type TaskOpts struct {
	Pipeline    string
	Priority    task.Priority
	MaxAttempts int
	Deadline    int
	// ConcurrencyKey and ConcurrencyPolicy, as a pipeline's concurrency block renders them.
	ConcurrencyKey    string
	ConcurrencyPolicy string
	// Steps names step rows stored with the task, pending, as a submit
	// stores a deploy's planned steps (saga.NewDeploy); none by default.
	Steps  []string
	Params json.RawMessage // stored as given, unvalidated (nil: none)
}

// Task submits a task as u and returns it.
func Task(t testing.TB, st *store.Store, u *auth.User, opts *TaskOpts) *task.Task {
	t.Helper()
	if opts == nil {
		opts = &TaskOpts{}
	}
	p := store.TaskInsertParams{
		TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Kind: task.KindDeploy, Pipeline: opts.Pipeline,
		Priority: opts.Priority, MaxAttempts: opts.MaxAttempts, DeadlineSeconds: opts.Deadline,
		ConcurrencyKey: opts.ConcurrencyKey, ConcurrencyPolicy: opts.ConcurrencyPolicy, Params: opts.Params,
	}
	if p.Pipeline == "" {
		p.Pipeline = "noop"
	}
	if len(opts.Steps) > 0 {
		p.ID = store.NewTaskID()
		for i, name := range opts.Steps {
			p.Steps = append(p.Steps, store.StepSave{Idx: i + 1, Name: name, State: "pending", IdempotencyKey: fmt.Sprintf("%s-%d", p.ID, i+1)})
		}
	}
	if p.Priority == 0 {
		p.Priority = task.PriorityNormal
	}
	tk, _, err := st.TaskInsert(t.Context(), p)
	if err != nil {
		t.Fatalf("error creating task: %v", err)
	}
	return tk
}

// AwaitingApproval claims the pending task taskID as a worker would and
// parks it on an approval of its first step that roles may decide.
func AwaitingApproval(t testing.TB, st *store.Store, taskID string, roles []string) store.Approval {
	t.Helper()
	return AwaitingApprovalOf(t, st, taskID, roles, "step")
}

// AwaitingApprovalOf is AwaitingApproval for an approval of kind (step or
// tool_call).
func AwaitingApprovalOf(t testing.TB, st *store.Store, taskID string, roles []string, kind string) store.Approval {
	t.Helper()
	written, err := st.TaskWrites(t.Context(), []store.TaskWrite{{ID: taskID, Token: claim(t, st, taskID),
		State: task.StateAwaitingApproval, Release: true,
		Approvals: &store.ApprovalPark{Steps: []store.ApprovalStep{{Idx: 1, Name: "release", Attempt: 1}}, Roles: roles, Timeout: time.Hour, Kind: kind},
		Events:    []task.Event{{Type: task.EventTaskState, Status: task.StatusApproval, Message: "Waiting for approval"}}}})
	if err != nil || len(written) != 1 {
		t.Fatalf("error parking for approval: %v (%d written)", err, len(written))
	}
	a, err := st.ApprovalLatest(t.Context(), taskID, 1)
	if err != nil {
		t.Fatalf("error reading the approval: %v", err)
	}
	return *a
}

// Completed claims the pending task taskID as a worker would and ends it
// completed.
func Completed(t testing.TB, st *store.Store, taskID string) {
	t.Helper()
	written, err := st.TaskWrites(t.Context(), []store.TaskWrite{{ID: taskID, Token: claim(t, st, taskID), State: task.StateCompleted, Release: true,
		Events: []task.Event{{Type: task.EventTaskCompleted, Status: task.StatusCompleted, Message: "completed"}}}})
	if err != nil || len(written) != 1 {
		t.Fatalf("error completing: %v", err)
	}
}

// claim claims the pending tasks as a worker would and returns taskID's
// lease token.
func claim(t testing.TB, st *store.Store, taskID string) string {
	t.Helper()
	claimed, err := st.TaskClaim(t.Context(), "testfactory", 100, time.Minute)
	if err != nil {
		t.Fatalf("error claiming: %v", err)
	}
	for _, c := range claimed {
		if c.Task.ID == taskID {
			return c.Task.LeaseToken
		}
	}
	t.Fatalf("task %s was not claimed", taskID)
	return ""
}

// Fixture runs one statement that fakes a history as a test's set-up (a
// task that ended last month, every state at once): the database lets it
// change a task's state in one step that the transition rule only allows
// through others (migration 00026), switching the rule's trigger off in its
// own transaction. Never for what a test checks.
func Fixture(t testing.TB, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, sql string, args ...any) {
	t.Helper()
	ctx := t.Context()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatalf("error starting a fixture: %v", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	// The transition rule's trigger is off in this transaction only (DDL
	// is transactional; the lock keeps other sessions of the test's
	// database out meanwhile): the production trigger has no way around it.
	if _, err := tx.Exec(ctx, `ALTER TABLE tasks DISABLE TRIGGER tasks_check_transition`); err != nil {
		t.Fatalf("error starting a fixture: %v", err)
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("error in a fixture: %v", err)
	}
	if _, err := tx.Exec(ctx, `ALTER TABLE tasks ENABLE TRIGGER tasks_check_transition`); err != nil {
		t.Fatalf("error ending a fixture: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("error committing a fixture: %v", err)
	}
}
