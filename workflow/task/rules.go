package task

import "slices"

// The domain's rules, each one pure function, called by the store's writes,
// the pages and the sockets alike (invariant 11).

// ApprovalKind is what an approval is for.
type ApprovalKind string

const (
	ApprovalStep     ApprovalKind = "step"      // a pipeline step that waits for a person
	ApprovalToolCall ApprovalKind = "tool_call" // an agent's mutating tool call (shown as "tool")
	// ApprovalEnvironment: an environment's reviewers, before the first step.
	ApprovalEnvironment ApprovalKind = "environment"
)

// ApprovalState is an approval's state.
type ApprovalState string

const (
	ApprovalPending  ApprovalState = "pending"
	ApprovalApproved ApprovalState = "approved"
	ApprovalRejected ApprovalState = "rejected"
	ApprovalExpired  ApprovalState = "expired"
	// ApprovalCancelled: its task was cancelled while it waited.
	ApprovalCancelled ApprovalState = "cancelled"
)

// StepState is a step's state (contract §2).
type StepState string

const (
	StepPending            StepState = "pending"
	StepRunning            StepState = "running"
	StepCompleted          StepState = "completed"
	StepFailed             StepState = "failed"
	StepCancelled          StepState = "cancelled"
	StepSkipped            StepState = "skipped"
	StepCompensating       StepState = "compensating"
	StepCompensated        StepState = "compensated"
	StepCompensationFailed StepState = "compensation_failed"
)

// deployerOrAbove are the team roles that may submit.
var deployerOrAbove = []string{"deployer", "approver", "admin"}

// MayDecide reports whether a person with role (in the task's team) may
// decide an approval of kind that names roles, on a task created by
// creatorID; when not, why says so in words for people. A pipeline step is
// never decided by the task's creator (four eyes) and needs one of the
// named roles; an agent's tool call may be confirmed by the task's creator
// (a deployer or above) or one of the named roles.
func MayDecide(kind ApprovalKind, roles []string, creatorID, actorID, role string) (ok bool, why string) {
	switch {
	case kind == ApprovalToolCall:
		if actorID == creatorID && slices.Contains(deployerOrAbove, role) || slices.Contains(roles, role) {
			return true, ""
		}
		return false, "an agent's tool call is confirmed by the task's creator or one of the roles " + joinRoles(roles)
	case actorID == creatorID:
		return false, "you created this task, so another person must decide (four eyes)"
	case !slices.Contains(roles, role):
		return false, "this approval needs one of the roles " + joinRoles(roles)
	}
	return true, ""
}

func joinRoles(roles []string) string {
	out := ""
	for i, r := range roles {
		switch {
		case i == 0:
		case i == len(roles)-1:
			out += " or "
		default:
			out += ", "
		}
		out += r
	}
	return out
}
