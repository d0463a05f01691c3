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
