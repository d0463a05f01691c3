package handlers

import (
	"flightdeck/internal/auth"
	"flightdeck/workflow/task"
)

// pickTeam chooses the team a new thing belongs to, for u to take act
// there: the named one (403 when u may not take act there), or, when none
// is named, the only team where u may. A refusal names the roles that may;
// several names what u does in the message asking to name one.
func pickTeam(u *auth.User, name string, act task.Act, several string) (auth.Membership, error) {
	var can []auth.Membership
	for _, m := range u.Memberships {
		if name != "" && m.Team == name {
			if !task.May(m.Role, act) {
				return m, forbiddenTo(act)
			}
			return m, nil
		}
		if task.May(m.Role, act) {
			can = append(can, m)
		}
	}
	switch {
	case name != "":
		return auth.Membership{}, errInvalid("team", "you are not a member of team %q", name)
	case len(can) == 1:
		return can[0], nil
	case len(can) == 0:
		return auth.Membership{}, forbiddenTo(act)
	}
	return auth.Membership{}, errInvalid("team", "you %s several teams: name one in team", several)
}

// deployTeam picks the team a submission goes to.
func deployTeam(u *auth.User, name string) (auth.Membership, error) {
	return pickTeam(u, name, task.ActSubmit, "deploy for")
}

// adminTeam picks the team a new webhook, a freeze or an audit query is
// for: act is which.
func adminTeam(u *auth.User, name string, act task.Act) (auth.Membership, error) {
	return pickTeam(u, name, act, "administer")
}
