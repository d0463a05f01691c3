package webhook

import (
	"context"
	"encoding/json"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

// taskBody is the contract's task JSON (the same shape GET
// /api/v1/tasks/{id} answers). Lists are never null.
type taskBody struct {
	*task.Task
	Steps     []task.Step          `json:"steps"`
	Approvals []store.Approval     `json:"approvals"`
	Questions []json.RawMessage    `json:"questions"`
	Artifacts []store.ArtifactMeta `json:"artifacts"`
}

// message is a delivery's body: the contract's {"type","task"} plus the
// event itself (extension: useful for non-terminal event types).
type message struct {
	Type  task.EventType `json:"type"`
	Task  taskBody       `json:"task"`
	Event task.Event     `json:"event"`
}

func loadTaskBody(ctx context.Context, st *store.Store, teamID, taskID string) (taskBody, error) {
	teams := []string{teamID}
	t, err := st.TaskGet(ctx, teams, taskID)
	if err != nil {
		return taskBody{}, err
	}
	b := taskBody{Task: t, Steps: []task.Step{}, Approvals: []store.Approval{}, Questions: []json.RawMessage{}, Artifacts: []store.ArtifactMeta{}}
	if steps, err := st.TaskSteps(ctx, teams, taskID); err != nil {
		return taskBody{}, err
	} else if steps != nil {
		b.Steps = steps
	}
	if as, err := st.ApprovalList(ctx, teams, taskID); err != nil {
		return taskBody{}, err
	} else if as != nil {
		b.Approvals = as
	}
	arts, err := st.ArtifactList(ctx, teams, taskID)
	if err != nil {
		return taskBody{}, err
	}
	for _, a := range arts {
		a.Excerpt = "" // in /meta; keeps the body small
		b.Artifacts = append(b.Artifacts, a)
		for i := range b.Steps {
			if b.Steps[i].Index == a.StepIdx {
				b.Steps[i].Artifacts = append(b.Steps[i].Artifacts, a.ID)
			}
		}
	}
	return b, nil
}
