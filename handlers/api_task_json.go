package handlers

import (
	"context"
	"time"

	"flightdeck/store"
	"flightdeck/workflow/saga"

	"flightdeck/workflow/task"
)

// taskJSON is the contract's task body. Lists are never null.
type taskJSON struct {
	*task.Task
	Steps     []task.Step          `json:"steps"`
	Approvals []store.Approval     `json:"approvals"`
	Questions []store.Question     `json:"questions"`
	Artifacts []store.ArtifactMeta `json:"artifacts"`
}

func toTaskJSON(t *task.Task) taskJSON {
	steps := t.Steps
	if steps == nil {
		steps = []task.Step{}
	}
	return taskJSON{Task: t, Steps: steps, Approvals: []store.Approval{}, Questions: []store.Question{}, Artifacts: []store.ArtifactMeta{}}
}

// submittedJSON is the answer to a submit (API, re-run, promotion): the
// task as inserted, with the approval it waits on when it waits on one
// (an environment's reviewers: contract §9, "the 202 lists the pending
// approval").
func (h *Handler) submittedJSON(ctx context.Context, t *task.Task) (taskJSON, error) {
	out := toTaskJSON(t)
	if t.State != task.StateAwaitingApproval {
		return out, nil
	}
	var err error
	out.Approvals, err = h.store.ApprovalList(ctx, []string{t.TeamID}, t.ID)
	return out, err
}

// loadTaskJSON is the full task body: the task with its steps and approvals.
func (h *Handler) loadTaskJSON(ctx context.Context, teamIDs []string, id string) (taskJSON, error) {
	t, err := h.store.TaskGet(ctx, teamIDs, id)
	if err != nil {
		return taskJSON{}, err
	}
	out := toTaskJSON(t)
	if t.Held, err = saga.Held(ctx, h.store, h.pipelines.Environments(), t, time.Now()); err != nil {
		return taskJSON{}, err
	}
	if out.Steps, err = h.store.TaskSteps(ctx, teamIDs, id); err != nil {
		return taskJSON{}, err
	}
	if out.Progress.TotalStep == 0 {
		// Not run yet: the count is that of the planned steps, as the
		// submit's answer says.
		out.Progress.TotalStep = len(out.Steps)
	}
	if out.Approvals, err = h.store.ApprovalList(ctx, teamIDs, id); err != nil {
		return taskJSON{}, err
	}
	if out.Questions, err = h.store.AgentQuestionList(ctx, teamIDs, id); err != nil {
		return taskJSON{}, err
	}
	if out.Artifacts, err = h.store.ArtifactList(ctx, teamIDs, id); err != nil {
		return taskJSON{}, err
	}
	for i := range out.Artifacts {
		out.Artifacts[i].Excerpt = "" // in /meta; keeps the task body small
	}
	for i, st := range out.Steps {
		for _, a := range out.Artifacts {
			if a.StepIdx == st.Index {
				out.Steps[i].Artifacts = append(out.Steps[i].Artifacts, a.ID)
			}
		}
	}
	return out, nil
}
