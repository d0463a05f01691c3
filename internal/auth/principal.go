package auth

import "flightdeck/workflow/task"

// Membership is a user's role in one team.
type Membership struct {
	TeamID string
	Team   string // the team's name
	Role   Role
}

// User is an authenticated person with the teams they belong to.
type User struct {
	ID          string
	Email       string
	Memberships []Membership
}

// TeamIDs lists the ids of the user's teams; every team-data query is scoped
// by it.
func (u *User) TeamIDs() []string {
	ids := make([]string, len(u.Memberships))
	for i, m := range u.Memberships {
		ids[i] = m.TeamID
	}
	return ids
}

// RoleIn returns the user's role in a team, or "" when not a member.
func (u *User) RoleIn(teamID string) Role {
	for _, m := range u.Memberships {
		if m.TeamID == teamID {
			return m.Role
		}
	}
	return ""
}

// Primary is the membership used when a request names no team: the one with
// the highest role, ties broken by team name (Memberships come sorted by name).
func (u *User) Primary() (Membership, bool) {
	var best Membership
	found := false
	for _, m := range u.Memberships {
		if !found || m.Role.AtLeast(best.Role) && m.Role != best.Role {
			best, found = m, true
		}
	}
	return best, found
}

// May reports whether u may take act in a team: task.May with u's role
// there (none when not a member).
func (u *User) May(teamID string, act task.Act) bool { return task.May(u.RoleIn(teamID), act) }

// TeamsWhereMay lists the ids of u's teams where u may take act: what a
// page offers the act for, and what a write of it is scoped by.
func (u *User) TeamsWhereMay(act task.Act) []string {
	var ids []string
	for _, m := range u.Memberships {
		if task.May(m.Role, act) {
			ids = append(ids, m.TeamID)
		}
	}
	return ids
}
