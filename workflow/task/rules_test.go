package task

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMayDecide(t *testing.T) {
	roles := []string{"approver", "admin"}
	for _, tt := range []struct {
		name        string
		kind        ApprovalKind
		actor, role string
		ok          bool
	}{
		{"ApproverOnSomeoneElsesStep", ApprovalStep, "bob", "approver", true},
		{"CreatorOnOwnStep", ApprovalStep, "alice", "admin", false},
		{"DeployerOnStep", ApprovalStep, "bob", "deployer", false},
		{"CreatorConfirmsOwnToolCall", ApprovalToolCall, "alice", "deployer", true},
		{"ViewerCreatorCannotConfirm", ApprovalToolCall, "alice", "viewer", false},
		{"ApproverConfirmsToolCall", ApprovalToolCall, "bob", "approver", true},
		{"DeployerNotCreatorOnToolCall", ApprovalToolCall, "bob", "deployer", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ok, why := MayDecide(tt.kind, roles, "alice", tt.actor, tt.role)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, ok, why == "", why)
		})
	}
	_, why := MayDecide(ApprovalStep, roles, "alice", "alice", "admin")
	require.Contains(t, why, "four eyes")
	_, why = MayDecide(ApprovalStep, roles, "alice", "bob", "viewer")
	require.Contains(t, why, "approver or admin")
}

func TestMayResume(t *testing.T) {
	const reason = "known flaky smoke test"
	for _, tt := range []struct {
		name        string
		action      ResumeAction
		failed      bool
		actor, role string
		comment     string
		want        ResumeRefusal
		whyContains string
	}{
		{"ContinueAPersonsPause", ResumeContinue, false, "alice", "deployer", "", ResumeAllowed, ""},
		{"ContinueOnAFailedStep", ResumeContinue, true, "alice", "deployer", "", ResumeConflict, "retry, skip or rollback"},
		{"RetryWithoutAFailedStep", ResumeRetry, false, "alice", "deployer", "", ResumeConflict, "continue"},
		{"RetryByTheCreator", ResumeRetry, true, "alice", "deployer", "", ResumeAllowed, ""},
		{"RollbackByADeployer", ResumeRollback, true, "bob", "deployer", "", ResumeAllowed, ""},
		{"ViewerMayNot", ResumeRetry, true, "bob", "viewer", "", ResumeForbidden, "deployer"},
		{"SkipByAnApprover", ResumeSkip, true, "bob", "approver", reason, ResumeAllowed, ""},
		{"SkipByTheCreator", ResumeSkip, true, "alice", "admin", reason, ResumeForbidden, "four eyes"},
		{"SkipByADeployer", ResumeSkip, true, "bob", "deployer", reason, ResumeForbidden, "approver or admin"},
		{"SkipWithAShortReason", ResumeSkip, true, "bob", "approver", "  too short ", ResumeInvalid, "10 characters"},
		{"SkipWithoutAFailedStep", ResumeSkip, false, "bob", "approver", reason, ResumeConflict, "continue"},
		{"UnknownAction", "redo", true, "bob", "approver", "", ResumeInvalid, "action"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, why := MayResume(tt.action, tt.failed, "alice", tt.actor, tt.role, tt.comment)
			require.Equal(t, tt.want, got, why)
			require.Contains(t, why, tt.whyContains)
			require.Equal(t, got == ResumeAllowed, why == "")
		})
	}
}

func TestPausedTransitions(t *testing.T) {
	for _, from := range []State{StatePending, StateScheduled, StateRunning} {
		require.True(t, CanTransition(from, StatePaused), from)
	}
	for _, to := range []State{StatePending, StateScheduled, StateCompensating, StateCancelled} {
		require.True(t, CanTransition(StatePaused, to), to)
	}
	require.False(t, CanTransition(StatePaused, StateCompleted), "a paused task runs again before it completes")
	require.False(t, CanTransition(StatePaused, StateRunning), "only a claim starts a task, from pending")
}
