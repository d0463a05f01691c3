package handlers

import (
	"encoding/json"

	"flightdeck/workflow/task"
)

// taskJSON is the contract's task body. Lists are never null.
type taskJSON struct {
	*task.Task
	Steps     []task.Step       `json:"steps"`
	Approvals []json.RawMessage `json:"approvals"`
	Questions []json.RawMessage `json:"questions"`
	Artifacts []json.RawMessage `json:"artifacts"`
}

func toTaskJSON(t *task.Task) taskJSON {
	steps := t.Steps
	if steps == nil {
		steps = []task.Step{}
	}
	return taskJSON{Task: t, Steps: steps, Approvals: []json.RawMessage{}, Questions: []json.RawMessage{}, Artifacts: []json.RawMessage{}}
}
