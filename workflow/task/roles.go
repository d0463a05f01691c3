package task

import (
	"fmt"
	"slices"
)

// Role is a person's role in a team (contract: viewer, deployer, approver,
// admin). Roles are ordered: each includes the rights of the ones before
// it. This is the one definition: the sign-in (internal/auth), the
// pipelines' approval roles and the rules below all use it.
type Role string

const (
	RoleViewer   Role = "viewer"
	RoleDeployer Role = "deployer"
	RoleApprover Role = "approver"
	RoleAdmin    Role = "admin"
)

// Roles are every role, lowest first: their order is the order of rights.
var Roles = []Role{RoleViewer, RoleDeployer, RoleApprover, RoleAdmin}

// rank is r's place in Roles, counted from 1; 0 for no role (not a member,
// or a name that is not a role), which includes nothing.
func (r Role) rank() int { return slices.Index(Roles, r) + 1 }

// AtLeast reports whether r includes the rights of min. Prefer May with an
// Act: it names what is allowed, not who.
func (r Role) AtLeast(min Role) bool { return r.rank() > 0 && r.rank() >= min.rank() }

// ParseRole validates a role name.
func ParseRole(s string) (Role, error) {
	if r := Role(s); r.rank() > 0 {
		return r, nil
	}
	return "", fmt.Errorf("unknown role %q (want %s)", s, joinRoles(RoleNames(Roles)))
}

// RoleNames are the names of roles, in order: what a pipeline's approval
// lists, and what messages for people join.
func RoleNames(roles []Role) []string {
	out := make([]string, len(roles))
	for i, r := range roles {
		out[i] = string(r)
	}
	return out
}
