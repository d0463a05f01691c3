package pages

// AgentView is what the task page shows of an agent task.
type AgentView struct {
	Answer        string // the final answer (result.text)
	Questions     []QuestionView
	Plan          []string
	Facts         []string
	RiskFlags     []string
	Iteration     int
	MaxIterations int
	Tokens        int
	ToolCalls     int
	CanInput      bool // may answer and add notes (task.ActAgentInput)
	Running       bool // not ended: notes are still read
	// ExplainURL, when set, offers "Explain this failure" (a failed deploy
	// on a server with an LLM).
	ExplainURL string
}

// QuestionView is one question the agent asked.
type QuestionView struct {
	ID, Text, State, Answer, AnsweredBy string
}

// progressUnit names what a task's progress counts: pipeline steps, or an
// agent's iterations of its budget.
func progressUnit(t TaskView) string {
	if t.Kind == "agent" {
		return "iterations"
	}
	return "steps"
}
