package task

// Act is something a person does that not every role may: the handlers,
// the sockets and the pages' buttons all ask May, so a button is offered
// exactly when its request would be allowed.
type Act string

const (
	ActSubmit      Act = "submit"       // submit a task (deploy, agent, promote) in a team
	ActRerun       Act = "rerun"        // re-run a finished task (Redeploy, Roll back)
	ActExplain     Act = "explain"      // ask the agent to explain a failed deploy
	ActCancel      Act = "cancel"       // cancel a task
	ActPause       Act = "pause"        // pause a task
	ActResume      Act = "resume"       // continue, retry or roll back a paused task (MayResume)
	ActSkipStep    Act = "skip_step"    // skip a failed step (MayResume adds four eyes)
	ActSetPriority Act = "set_priority" // change a waiting task's priority
	ActAgentInput  Act = "agent_input"  // answer an agent's question, leave it a note
	// ActConfirmOwnCall: confirm an agent's tool call on a task one created
	// (MayDecide); anyone else needs one of the approval's roles.
	ActConfirmOwnCall Act = "confirm_own_call"
	// ActApprove: decide an approval or an environment's review whose rule
	// names no roles (a rule's roles: replace this).
	ActApprove        Act = "approve"
	ActResolve        Act = "resolve"         // retry or resolve a task in needs_attention
	ActOverride       Act = "override"        // break the glass on a freeze or a promotion gate
	ActManageFreezes  Act = "manage_freezes"  // create and end freezes
	ActManageWebhooks Act = "manage_webhooks" // create, delete, redeliver and list webhooks
	ActReadAudit      Act = "read_audit"      // read the team's audit log
)

// mayTable is who may do what: the lowest role that may take each act.
// Roles are ordered, so one role per act says it all; an act missing here
// is allowed to nobody. Change a rule here and the API, the sockets and
// the pages follow.
var mayTable = map[Act]Role{
	ActSubmit:         RoleDeployer,
	ActRerun:          RoleDeployer,
	ActExplain:        RoleDeployer,
	ActCancel:         RoleDeployer,
	ActPause:          RoleDeployer,
	ActResume:         RoleDeployer,
	ActSkipStep:       RoleApprover,
	ActSetPriority:    RoleDeployer,
	ActAgentInput:     RoleDeployer,
	ActConfirmOwnCall: RoleDeployer,
	ActApprove:        RoleApprover,
	ActResolve:        RoleAdmin,
	ActOverride:       RoleAdmin,
	ActManageFreezes:  RoleAdmin,
	ActManageWebhooks: RoleAdmin,
	ActReadAudit:      RoleAdmin,
}

// Acts lists every act, for tests and docs.
func Acts() []Act {
	return []Act{ActSubmit, ActRerun, ActExplain, ActCancel, ActPause, ActResume, ActSkipStep, ActSetPriority,
		ActAgentInput, ActConfirmOwnCall, ActApprove, ActResolve, ActOverride, ActManageFreezes, ActManageWebhooks, ActReadAudit}
}

// May reports whether a person with role in a team may take act there. A
// non-member ("") may do nothing.
func May(role Role, act Act) bool {
	min, ok := mayTable[act]
	return ok && role.AtLeast(min)
}

// RolesThatMay are the roles that may take act, lowest first: what a
// refusal names, and the default roles of an approval.
func RolesThatMay(act Act) []Role {
	var out []Role
	for _, r := range Roles {
		if May(r, act) {
			out = append(out, r)
		}
	}
	return out
}

// WhyNot says in words for people who may take act: "needs the role
// deployer, approver or admin".
func WhyNot(act Act) string {
	rs := RolesThatMay(act)
	if len(rs) == 1 {
		return "needs the role " + string(rs[0])
	}
	return "needs the role " + joinRoles(RoleNames(rs))
}

// DefaultDeciders are the roles that decide an approval, or an
// environment's review, whose rule names none.
func DefaultDeciders() []string { return RoleNames(RolesThatMay(ActApprove)) }
