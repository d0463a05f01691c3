package handlers

import (
	"context"
	"encoding/json"

	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// currentDeploysPage is how many of a pipeline's newest completed deploys
// are searched for a target's current one (one page of the task list).
const currentDeploysPage = 200

// currentDeploys finds a target's current deploy: its newest completed
// one, by the rollback's rule (pipeline.InTarget). Each team and pipeline
// is read once per page view, from the task list's index.
type currentDeploys struct {
	st    *store.Store
	pages map[[2]string]deployPage
}

type deployPage struct {
	tasks    []*task.Task
	complete bool // the page holds every completed deploy of the pipeline
}

func (h *Handler) newCurrentDeploys() *currentDeploys {
	return &currentDeploys{st: h.store, pages: map[[2]string]deployPage{}}
}

// of returns the current deploy of the target that params (a deploy of p
// in teamID) go to, or nil; complete says that nil means there is none.
func (c *currentDeploys) of(ctx context.Context, teamID string, p *pipeline.Pipeline, params map[string]any) (*task.Task, bool, error) {
	key := [2]string{teamID, p.Name}
	pg, ok := c.pages[key]
	if !ok {
		tasks, next, err := c.st.TaskList(ctx, store.TaskListParams{TeamIDs: []string{teamID}, Kind: string(task.KindDeploy),
			State: string(task.StateCompleted), Pipeline: p.Name, Limit: currentDeploysPage})
		if err != nil {
			return nil, false, err
		}
		pg = deployPage{tasks: tasks, complete: next == ""}
		c.pages[key] = pg
	}
	target := p.TargetOf(params)
	for _, t := range pg.tasks {
		var got map[string]any
		if json.Unmarshal(t.Params, &got) == nil && p.InTarget(target, got) {
			return t, true, nil
		}
	}
	return nil, pg.complete, nil
}
