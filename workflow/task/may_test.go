package task

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMay writes out who may do what, role by role, apart from the table
// it checks: a change of a rule fails here until this table says so too.
func TestMay(t *testing.T) {
	t.Parallel()
	//                 viewer deployer approver admin
	want := map[Act][4]bool{
		ActSubmit:         {false, true, true, true},
		ActRerun:          {false, true, true, true},
		ActExplain:        {false, true, true, true},
		ActCancel:         {false, true, true, true},
		ActPause:          {false, true, true, true},
		ActResume:         {false, true, true, true},
		ActSkipStep:       {false, false, true, true},
		ActSetPriority:    {false, true, true, true},
		ActAgentInput:     {false, true, true, true},
		ActConfirmOwnCall: {false, true, true, true},
		ActApprove:        {false, false, true, true},
		ActResolve:        {false, false, false, true},
		ActOverride:       {false, false, false, true},
		ActManageFreezes:  {false, false, false, true},
		ActManageWebhooks: {false, false, false, true},
		ActReadAudit:      {false, false, false, true},
	}
	require.ElementsMatch(t, Acts(), slices.Collect(maps.Keys(want)), "every act is written out here")
	require.ElementsMatch(t, Acts(), slices.Collect(maps.Keys(mayTable)), "every act has a rule")
	require.Equal(t, []Role{RoleViewer, RoleDeployer, RoleApprover, RoleAdmin}, Roles)
	for _, act := range Acts() {
		for i, r := range Roles {
			require.Equal(t, want[act][i], May(r, act), "may %s %s", r, act)
		}
		require.False(t, May("", act), "a non-member may not %s", act)
		require.False(t, May("root", act), "an unknown role may not %s", act)
	}
	require.False(t, May(RoleAdmin, "launch"), "an act without a rule is nobody's")
}

func TestWhyNotAndDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, "needs the role deployer, approver or admin", WhyNot(ActCancel))
	require.Equal(t, "needs the role approver or admin", WhyNot(ActSkipStep))
	require.Equal(t, "needs the role admin", WhyNot(ActResolve))
	require.Equal(t, []string{"approver", "admin"}, DefaultDeciders())
}
