package task

import (
	"slices"
)

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

// MayDecide reports whether a person with role (in the task's team) may
// decide an approval of kind that names roles, on a task created by
// creatorID; when not, why says so in words for people. A pipeline step is
// never decided by the task's creator (four eyes) and needs one of the
// named roles; an agent's tool call may be confirmed by the task's creator
// (when May ActConfirmOwnCall) or one of the named roles. role is a string
// because the approval's roles are the names its rule lists.
func MayDecide(kind ApprovalKind, roles []string, creatorID, actorID, role string) (ok bool, why string) {
	switch {
	case kind == ApprovalToolCall:
		if actorID == creatorID && May(Role(role), ActConfirmOwnCall) || slices.Contains(roles, role) {
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

// ResumeAction is how a person resumes a paused task (contract §10).
type ResumeAction string

const (
	ResumeContinue ResumeAction = "continue" // go on at the next step (a task a person paused)
	ResumeRetry    ResumeAction = "retry"    // run the failed step again: its next attempt, the same key
	ResumeSkip     ResumeAction = "skip"     // mark the failed step skipped (never compensated) and go on
	ResumeRollback ResumeAction = "rollback" // compensate now; the task ends failed
)

// ResumeActions are the actions a resume may name.
var ResumeActions = []ResumeAction{ResumeContinue, ResumeRetry, ResumeSkip, ResumeRollback}

// SkipCommentMin is the shortest reason a skip is given with, in characters.
const SkipCommentMin = 10

// ResumeRefusal is why a resume may not happen.
type ResumeRefusal int

const (
	ResumeAllowed   ResumeRefusal = iota
	ResumeConflict                // the action does not fit the task's pause
	ResumeForbidden               // the person may not take it
	ResumeInvalid                 // the request is incomplete (a skip's reason)
)

// MayResume reports whether a person with role (in the task's team) may
// resume a paused task with action, and why not in words for people.
// onFailedStep says whether the task waits on a failed step's decision:
// then retry, skip and rollback apply, otherwise (a task a person paused)
// continue does. Who may resume at all is ActResume's rule; a skip leaves
// a step undone, so it takes ActSkipStep's role and a person who did not
// create the task (four eyes), with a reason of at least SkipCommentMin
// characters.
func MayResume(action ResumeAction, onFailedStep bool, creatorID, actorID, role, comment string) (ResumeRefusal, string) {
	if !May(Role(role), ActResume) {
		return ResumeForbidden, "resuming a task " + WhyNot(ActResume)
	}
	switch action {
	case ResumeContinue:
		if onFailedStep {
			return ResumeConflict, "a step failed: decide retry, skip or rollback"
		}
		return ResumeAllowed, ""
	case ResumeRetry, ResumeRollback:
	case ResumeSkip:
		if onFailedStep {
			switch {
			case !May(Role(role), ActSkipStep):
				return ResumeForbidden, "skipping a failed step " + WhyNot(ActSkipStep)
			case actorID == creatorID:
				return ResumeForbidden, "you created this task, so another person must decide a skip (four eyes)"
			case NonSpaceChars(comment) < SkipCommentMin:
				return ResumeInvalid, "say why the step may be skipped (at least 10 characters)"
			}
		}
	default:
		return ResumeInvalid, "action must be continue, retry, skip or rollback"
	}
	if !onFailedStep {
		return ResumeConflict, "no step failed: resume with continue"
	}
	return ResumeAllowed, ""
}
