package handlers

import (
	"strings"

	"flightdeck/internal/auth"
	"flightdeck/views/pages"
	"flightdeck/workflow/task"
)

// decisionLogLines is how many of a failed step's last log lines its
// decision card shows (the step's log box and artifact have them all).
const decisionLogLines = 20

// controlView is the run page's run control for u (contract §10): what
// they may do now by task.May and task.MayResume, the rules the handlers
// and the store apply. Nil when nothing applies (a finished task, or a
// person who may neither pause nor resume).
func controlView(t *task.Task, u *auth.User, role task.Role, m *runModel) *pages.ControlView {
	mayPause := task.May(role, task.ActPause)
	if t.State.Terminal() || !mayPause && !task.May(role, task.ActResume) {
		return nil
	}
	if t.CancelRequested {
		// The cancel wins over a pause, a resume or a decision (issue 34):
		// show where the task is going, not the state it rests in.
		return &pages.ControlView{CancelRequested: true}
	}
	c := &pages.ControlView{PauseRequested: t.PauseRequested, Paused: t.State == task.StatePaused}
	// the store's rule: the button shows what the write would accept
	effect, _ := task.PauseOf(t.State, t.Kind, t.PauseRequested)
	c.CanPause = mayPause && effect != task.PauseRefused
	may := func(a task.ResumeAction, comment string) (bool, string) {
		refusal, why := task.MayResume(a, t.FailedStep != nil, t.CreatedByID, u.ID, string(role), comment)
		return refusal == task.ResumeAllowed, why
	}
	if c.Paused && t.FailedStep == nil {
		c.CanResume, _ = may(task.ResumeContinue, "")
	}
	if fs := t.FailedStep; c.Paused && fs != nil {
		f := &pages.FailedStepView{Index: fs.Index, Attempt: fs.Attempt, Name: fs.Name, Error: fs.Error, ExpiresAt: t.DecisionExpiresAt}
		if st := m.steps[fs.Index]; st != nil {
			f.Log = tail(st.fwd.lines, decisionLogLines)
		}
		f.CanRetry, _ = may(task.ResumeRetry, "")
		f.CanRollback, _ = may(task.ResumeRollback, "")
		// the reason is asked for in the card: judge the person alone
		var why string
		f.CanSkip, why = may(task.ResumeSkip, strings.Repeat("x", task.SkipCommentMin))
		if !f.CanSkip {
			f.SkipWhyNot = strings.ToUpper(why[:1]) + why[1:] + "."
		}
		c.Failed = f
	}
	if !c.CanPause && !c.PauseRequested && !c.Paused {
		return nil
	}
	return c
}
