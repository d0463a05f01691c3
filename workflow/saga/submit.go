package saga

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// NewDeploy fills in what every submit of a deploy stores, whoever submits
// it (the API, the form, an agent's start_deploy, a re-run): the pipeline,
// the validated params split into public and secret ones, the concurrency
// key, the target key (its environment), and the task's planned steps with
// their idempotency keys under a new task id. Storing the keys with the task means its first run starts
// its first action without a write of its own: the key is stored before
// the action runs (invariant 4) since the task was accepted. The caller
// sets who, the team's id, the priority and the rest.
//
// team is the team's name (templates see it as .task.team); params are
// pipeline-validated.
func NewDeploy(in *store.TaskInsertParams, p *pipeline.Pipeline, params map[string]any, team string) error {
	pub, sec := p.SplitSecrets(params)
	// The keys are stored and shown in the clear (a waiting task's
	// blocked_by, the environments), so they are made of the public params:
	// a key template that names a secret param sees "[REDACTED]".
	key, policy, err := p.ConcurrencyKey(pub)
	if err != nil {
		return err
	}
	id := store.NewTaskID()
	steps, err := PlannedSteps(p, params, id, team)
	if err != nil {
		return err
	}
	in.Kind, in.Pipeline, in.ID, in.Steps = task.KindDeploy, p.Name, id, steps
	in.Params, _ = json.Marshal(pub)
	in.SecretParams = nil
	if sec != nil {
		in.SecretParams, _ = json.Marshal(sec)
	}
	in.ConcurrencyKey, in.ConcurrencyPolicy = key, policy
	in.TargetKey = p.TargetKey(pub)
	return nil
}

// ErrUnreadableParams: the deploy to repeat has params that are not a JSON
// object (RepeatSecrets).
var ErrUnreadableParams = errors.New("unreadable params")

// RepeatSecrets puts into params, the params of a new deploy of p that
// repeats src (a re-run, an agent's rollback), the real values src ran
// with for p's secret parameters, in place of the "[REDACTED]" stand-ins
// that people saw; one src did not set is left out. The values are read as
// only a worker reads them (store.TaskSecretParams). A value src keeps in
// its public params also counts unless it is a stand-in: a deploy stored
// before secrets were kept apart, or before the parameter became secret,
// ran with it. No read is made when p has no secret parameter.
func RepeatSecrets(ctx context.Context, st *store.Store, src *task.Task, p *pipeline.Pipeline, params map[string]any) error {
	var names []string
	for _, prm := range p.Params {
		if prm.Secret {
			names = append(names, prm.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	raw, err := st.TaskSecretParams(ctx, []string{src.TeamID}, src.ID)
	if err != nil {
		return fmt.Errorf("error reading the secret params of task %s: %w", src.ID, err)
	}
	var secret, public map[string]any
	if raw != nil && json.Unmarshal(raw, &secret) != nil || len(src.Params) > 0 && json.Unmarshal(src.Params, &public) != nil {
		return fmt.Errorf("task %s: %w", src.ID, ErrUnreadableParams)
	}
	for _, name := range names {
		if v := secret[name]; v != nil {
			params[name] = v
		} else if v := public[name]; v != nil && v != pipeline.Redacted {
			params[name] = v
		} else {
			delete(params, name)
		}
	}
	return nil
}

// PlannedSteps are the step rows of a deploy of p with these params before
// it runs: every planned step, pending, with its idempotency key.
func PlannedSteps(p *pipeline.Pipeline, params map[string]any, taskID, team string) ([]store.StepSave, error) {
	stages, _, err := p.Plan(params)
	if err != nil {
		return nil, err
	}
	var out []store.StepSave
	for _, st := range stages {
		for _, ps := range st.Steps {
			out = append(out, store.StepSave{Idx: ps.Index, Name: ps.Name, State: task.StepPending,
				IdempotencyKey: stepKey(taskID, team, params, ps)})
		}
	}
	return out, nil
}

// stepKey is a planned step's idempotency key: derived from the task, the
// step and its rendered inputs (a step whose inputs do not render gets
// the error as its input, as the run would).
func stepKey(taskID, team string, params map[string]any, ps pipeline.PlannedStep) string {
	with, err := renderStep(ps.Step.With, taskID, team, params, ps)
	if err != nil {
		with = map[string]any{"render_error": err.Error()}
	}
	return idempotencyKey(taskID, ps, with)
}

// renderStep renders a step's `with` for ps, as the run and its key see
// it; a step without inputs skips building the template data.
func renderStep(with map[string]any, taskID, team string, params map[string]any, ps pipeline.PlannedStep) (map[string]any, error) {
	if len(with) == 0 {
		return map[string]any{}, nil
	}
	return render(with, templateData(taskID, team, params, ps))
}

// templateData is what templates in `with` see.
func templateData(taskID, team string, params map[string]any, ps pipeline.PlannedStep) map[string]any {
	return map[string]any{
		"params": params,
		"task":   map[string]any{"id": taskID, "team": team},
		"item":   ps.Item,
	}
}

// Submission is one submit of a task, whoever makes it: the API, the
// form, a re-run, a promotion, an agent's start_deploy, an explanation.
// Insert carries the caller's part (team, creator, priority, attempts,
// idempotency key, pending bound, trace, an agent task's prompt). For a
// deploy, Pipeline and Params (validated, secret ones included) are set,
// and Team is the team's name (templates see it); Protection is what the
// submit brings to its environment's rules.
type Submission struct {
	Insert     store.TaskInsertParams
	Pipeline   *pipeline.Pipeline
	Params     map[string]any
	Team       string
	Protection Protection
}

// Submit is the one way a task is submitted: a deploy is planned (its
// steps and keys, NewDeploy), held to its environment's rules
// (ProtectDeploy) and inserted; any other task is inserted as given. A
// caller cannot forget the rules, since there is no other way in: a
// refusal, a plan that does not render, is a *Refusal (the contract's
// code); the insert's errors are the store's (ErrQueueFull,
// ErrIdempotencyConflict). created is false when an idempotency key gave
// back an earlier task.
func Submit(ctx context.Context, st *store.Store, s Submission) (t *task.Task, created bool, err error) {
	in := s.Insert
	if s.Pipeline != nil {
		in.Team = cmp.Or(in.Team, s.Team) // the templates' .task.team, as the run sees it
		if err := NewDeploy(&in, s.Pipeline, s.Params, s.Team); err != nil {
			return nil, false, &Refusal{Code: "invalid", Field: "params", Message: err.Error()}
		}
		if err := ProtectDeploy(ctx, st, &in, s.Pipeline, s.Params, s.Protection); err != nil {
			return nil, false, err
		}
	}
	return st.TaskInsert(ctx, in)
}
