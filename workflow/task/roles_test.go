package task

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoleAtLeast(t *testing.T) {
	t.Parallel()
	tests := []struct {
		r, min Role
		want   bool
	}{
		{RoleViewer, RoleViewer, true},
		{RoleViewer, RoleDeployer, false},
		{RoleDeployer, RoleViewer, true},
		{RoleApprover, RoleDeployer, true},
		{RoleApprover, RoleAdmin, false},
		{RoleAdmin, RoleApprover, true},
		{Role("root"), RoleViewer, false},
		{Role(""), Role(""), false}, // a non-member has no rights, not even "none"
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.r.AtLeast(tt.min), "%s >= %s", tt.r, tt.min)
	}
}

func TestParseRole(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"viewer", "deployer", "approver", "admin"} {
		r, err := ParseRole(name)
		require.NoError(t, err)
		require.Equal(t, Role(name), r)
	}
	_, err := ParseRole("owner")
	require.EqualError(t, err, `unknown role "owner" (want viewer, deployer, approver or admin)`)
	_, err = ParseRole("")
	require.Error(t, err)
}
