package handlers

import (
	"net/http"

	"flightdeck/internal/auth"
)

// teamIDsAtLeast lists u's teams where u's role is at least min.
func teamIDsAtLeast(u *auth.User, min auth.Role) []string {
	var ids []string
	for _, m := range u.Memberships {
		if m.Role.AtLeast(min) {
			ids = append(ids, m.TeamID)
		}
	}
	return ids
}

// pickTeam chooses the team a new thing belongs to: the named one (403 when
// u's role there is below min), or, when none is named, the only team where
// u has at least min. none is the error when there is no such team; several
// names what u does in the message asking to name one.
func pickTeam(u *auth.User, name string, min auth.Role, none error, several string) (auth.Membership, error) {
	var can []auth.Membership
	for _, m := range u.Memberships {
		if name != "" && m.Team == name {
			if !m.Role.AtLeast(min) {
				return m, errForbidden
			}
			return m, nil
		}
		if m.Role.AtLeast(min) {
			can = append(can, m)
		}
	}
	switch {
	case name != "":
		return auth.Membership{}, errInvalid("team", "you are not a member of team %q", name)
	case len(can) == 1:
		return can[0], nil
	case len(can) == 0:
		return auth.Membership{}, none
	}
	return auth.Membership{}, errInvalid("team", "you %s several teams: name one in team", several)
}

// deployTeam picks the team a submission goes to.
func deployTeam(u *auth.User, name string) (auth.Membership, error) {
	return pickTeam(u, name, auth.RoleDeployer,
		&APIError{Status: http.StatusForbidden, Code: "forbidden", Message: "viewers cannot submit tasks"}, "deploy for")
}

// adminTeam picks the team a new webhook belongs to.
func adminTeam(u *auth.User, name string) (auth.Membership, error) {
	return pickTeam(u, name, auth.RoleAdmin, errForbidden, "administer")
}
