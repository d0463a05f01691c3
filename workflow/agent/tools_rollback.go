package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// rollbackTarget is what identifies a deploy target of a pipeline: values of
// its parameters other than the version and secrets (credentials are not
// identity, and the model never sees them).
type rollbackTarget struct {
	p      *pipeline.Pipeline
	ver    string         // the version parameter, "" for none
	values map[string]any // normalised, compared as JSON
}

// newTarget validates given against p's parameters minus the version and
// secrets. With a version parameter, omitted parameters take their
// defaults (as a submission would), so the target is a deploy's params
// minus its version. Without one, only the given parameters are compared:
// pinning every parameter would leave nothing to roll back.
func newTarget(p *pipeline.Pipeline, given map[string]any) (*rollbackTarget, error) {
	ver := p.VersionParam()
	shadow := &pipeline.Pipeline{Name: p.Name}
	for _, prm := range p.Params {
		v, ok := given[prm.Name]
		switch {
		case prm.Name == ver:
			if ok {
				return nil, fmt.Errorf("leave %s out of the target: the version is what a rollback changes", ver)
			}
			continue
		case prm.Secret:
			if ok {
				return nil, fmt.Errorf("%s is a secret parameter, not part of a target", prm.Name)
			}
			continue
		case ver == "" && !ok:
			prm.Required, prm.Default = false, nil
		case v == nil:
			delete(given, prm.Name)
		}
		// The copy keeps the parameter's compiled pattern.
		shadow.Params = append(shadow.Params, prm)
	}
	raw, err := json.Marshal(given)
	if err != nil {
		return nil, fmt.Errorf("target: %v", err)
	}
	values, ferr := shadow.Validate(raw)
	if ferr != nil {
		field := strings.Replace(ferr.Field, "params.", "target.", 1)
		return nil, fmt.Errorf("%s %s (%s takes %s)", field, ferr.Message, p.Name, paramList(p))
	}
	if len(values) == 0 && ver == "" {
		return nil, fmt.Errorf("name the target: %s has no version parameter, so give at least one of %s", p.Name, paramList(p))
	}
	return &rollbackTarget{p: p, ver: ver, values: values}, nil
}

func paramList(p *pipeline.Pipeline) string {
	var names []string
	for _, prm := range p.Params {
		if !prm.Secret {
			names = append(names, prm.Name)
		}
	}
	if len(names) == 0 {
		return "no parameters"
	}
	return strings.Join(names, ", ")
}

// matches says whether a deploy's params belong to the target.
func (t *rollbackTarget) matches(params map[string]any) bool { return t.p.InTarget(t.values, params) }

// state is what a rollback changes: the version, or without one every
// parameter but secrets.
func (t *rollbackTarget) state(params map[string]any) string {
	if t.ver != "" {
		return pipeline.Canon(params[t.ver])
	}
	m := map[string]any{}
	for _, prm := range t.p.Params {
		if !prm.Secret {
			m[prm.Name] = params[prm.Name]
		}
	}
	return pipeline.Canon(m)
}

// String describes the target for people and the model.
func (t *rollbackTarget) String() string {
	var parts []string
	for _, prm := range t.p.Params {
		if v, ok := t.values[prm.Name]; ok {
			parts = append(parts, prm.Name+"="+strings.Trim(pipeline.Canon(v), `"`))
		}
	}
	if len(parts) == 0 {
		return t.p.Name
	}
	return t.p.Name + " " + strings.Join(parts, " ")
}

// rollbackPages bounds the history walk (200 tasks a page).
const rollbackPages = 10

// prepareRollback finds the target's current deploy and the one to repeat
// (rollbackHistory) and plans the repeat for a person to confirm.
func prepareRollback(ctx context.Context, e *Env, args map[string]any) (json.RawMessage, error) {
	name, _ := args["pipeline"].(string)
	given := map[string]any{}
	if m, ok := args["target"].(map[string]any); ok {
		for k, v := range m {
			given[k] = v
		}
	}
	for _, k := range []string{"app", "env"} {
		s, ok := args[k].(string)
		if !ok {
			continue
		}
		if prev, dup := given[k]; dup && prev != s {
			return nil, fmt.Errorf("%s and target.%s differ; give one", k, k)
		}
		given[k] = s
	}
	id, byTask := args["task_id"].(string)
	if byTask {
		if len(given) > 0 {
			return nil, fmt.Errorf("give task_id or the target, not both")
		}
		src, err := e.Store.TaskGet(ctx, e.teams(), id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("no task %s in your team", id)
		}
		if err != nil {
			return nil, err
		}
		if src.Kind != task.KindDeploy {
			return nil, fmt.Errorf("task %s is not a deploy; give a deploy task of the target", id)
		}
		if name != "" && name != src.Pipeline {
			return nil, fmt.Errorf("task %s is a deploy of %s, not %s", id, src.Pipeline, name)
		}
		name = src.Pipeline
		if err := json.Unmarshal(src.Params, &given); err != nil {
			return nil, fmt.Errorf("task %s has unreadable params", id)
		}
	}
	if name == "" {
		name = "web-service"
	}
	p, ok := e.Catalog.Get(name)
	if !ok {
		return nil, fmt.Errorf("unknown pipeline %q; list_pipelines shows them", name)
	}
	if byTask {
		// The task's params minus its version and secrets are the target.
		for _, prm := range p.Params {
			if prm.Secret || prm.Name == p.VersionParam() {
				delete(given, prm.Name)
			}
		}
		for k := range given {
			if !hasParam(p, k) {
				delete(given, k) // a parameter the pipeline has dropped since
			}
		}
	}
	target, err := newTarget(p, given)
	if err != nil {
		return nil, err
	}

	current, curParams, previous, prevParams, err := rollbackHistory(ctx, e, target)
	if err != nil {
		return nil, err
	}
	switch {
	case current == "":
		return nil, fmt.Errorf("no completed deploy of %s: nothing to roll back", target)
	case previous == "" && target.ver != "":
		return nil, fmt.Errorf("%s has only ever run %s %s: no previous version to roll back to",
			target, target.ver, strings.Trim(pipeline.Canon(curParams[target.ver]), `"`))
	case previous == "":
		return nil, fmt.Errorf("every completed deploy of %s used the same parameters: nothing to roll back to", target)
	}
	params, err := rollbackParams(p, previous, prevParams)
	if err != nil {
		return nil, err
	}
	plan := deployPlan{Pipeline: p.Name, Params: params, Priority: "high", RollbackFromTask: current, RollbackTo: previous}
	if target.ver != "" {
		plan.RollbackFrom = strings.Trim(pipeline.Canon(curParams[target.ver]), `"`)
	}
	return json.Marshal(plan)
}

// rollbackParams validates the params of the deploy a rollback repeats,
// as read back (public: a secret one that was set is "[REDACTED]"), and
// returns them with each secret parameter that will be set shown as
// "[REDACTED]": a person confirms this plan, and restoreSecrets puts the
// real values in when it runs. Secrets are not validated here, their
// values being out of sight; the deploy's own run validates them.
func rollbackParams(p *pipeline.Pipeline, id string, prev map[string]any) (map[string]any, error) {
	shadow := &pipeline.Pipeline{Name: p.Name}
	public := map[string]any{}
	for k, v := range prev {
		public[k] = v
	}
	var secret []pipeline.Param
	for _, prm := range p.Params {
		if !prm.Secret {
			// The copy keeps the parameter's compiled pattern.
			shadow.Params = append(shadow.Params, prm)
			continue
		}
		secret = append(secret, prm)
		delete(public, prm.Name)
	}
	raw, _ := json.Marshal(public)
	params, ferr := shadow.Validate(raw)
	if ferr != nil {
		return nil, fmt.Errorf("the previous deploy's params (task %s) are no longer valid for %s: %s", id, p.Name, ferr.Error())
	}
	for _, prm := range secret {
		v, set := prev[prm.Name]
		switch {
		case set && v != nil, prm.Default != nil:
			params[prm.Name] = redacted
		case prm.Required:
			return nil, fmt.Errorf("the previous deploy's params (task %s) are no longer valid for %s: params.%s is required", id, p.Name, prm.Name)
		}
	}
	return params, nil
}

func hasParam(p *pipeline.Pipeline, name string) bool {
	for _, prm := range p.Params {
		if prm.Name == name {
			return true
		}
	}
	return false
}

// restoreSecrets puts the secret params of the deploy a rollback repeats
// back into the plan (they are not shown to the person who confirms it).
func (e *Env) restoreSecrets(ctx context.Context, p *pipeline.Pipeline, plan *deployPlan) error {
	src, err := e.Store.TaskGet(ctx, e.teams(), plan.RollbackTo)
	if err != nil {
		return fmt.Errorf("error reading the deploy to repeat (%s): %w", plan.RollbackTo, err)
	}
	err = saga.RepeatSecrets(ctx, e.Store, src, p, plan.Params)
	if errors.Is(err, saga.ErrUnreadableParams) {
		return fmt.Errorf("the deploy to repeat (%s) has unreadable params", plan.RollbackTo)
	}
	if err != nil {
		return fmt.Errorf("error reading the deploy to repeat (%s): %w", plan.RollbackTo, err)
	}
	return nil
}

// rollbackHistory finds the target's current deploy and the one a rollback
// repeats (ids and public params; "" when there is none). The target's
// environment answers when the rollback names the pipeline's whole target
// and the environment knows both: the rule the environments page rolls back
// by (store.EnvironmentList: the last completed deploy, and the last one
// before it whose params differ). Otherwise (a partial target of a pipeline
// without a version parameter, history from before deploys stored their
// target) the team's completed deploys are walked, newest first.
func rollbackHistory(ctx context.Context, e *Env, t *rollbackTarget) (cur string, curParams map[string]any, prev string, prevParams map[string]any, err error) {
	if cur, curParams, prev, prevParams, ok, err := fromEnvironment(ctx, e, t); err != nil || ok {
		return cur, curParams, prev, prevParams, err
	}
	return walkHistory(ctx, e, t)
}

// fromEnvironment is the target's environment's answer; ok is false when
// it has none for this target.
func fromEnvironment(ctx context.Context, e *Env, t *rollbackTarget) (cur string, curParams map[string]any, prev string, prevParams map[string]any, ok bool, err error) {
	for _, name := range t.p.TargetParams() {
		if _, named := t.values[name]; !named {
			return "", nil, "", nil, false, nil
		}
	}
	key := t.p.TargetKey(t.values)
	if key == "" {
		return "", nil, "", nil, false, nil
	}
	envs, err := e.Store.EnvironmentList(ctx, store.EnvironmentListParams{TeamIDs: e.teams(), Pipeline: t.p.Name, TargetKey: key})
	if err != nil || len(envs) != 1 || envs[0].Current == nil || envs[0].Previous == nil {
		return "", nil, "", nil, false, err
	}
	env := envs[0]
	if json.Unmarshal(env.Current.Params, &curParams) != nil || json.Unmarshal(env.Previous.Params, &prevParams) != nil ||
		!t.matches(curParams) || !t.matches(prevParams) {
		return "", nil, "", nil, false, nil
	}
	return env.Current.TaskID, curParams, env.Previous.TaskID, prevParams, true, nil
}

// walkHistory pages through the team's completed deploys of the target's
// pipeline, newest first: the first that belongs to the target is the
// current one; the first older one in another state (another version) is
// what the rollback deploys again.
func walkHistory(ctx context.Context, e *Env, target *rollbackTarget) (current string, curParams map[string]any, previous string, prevParams map[string]any, err error) {
	before := ""
	for page := 0; page < rollbackPages && previous == ""; page++ {
		tasks, next, err := e.Store.TaskList(ctx, store.TaskListParams{TeamIDs: e.teams(), Kind: "deploy", State: "completed",
			Pipeline: target.p.Name, Before: before, Limit: 200})
		if err != nil {
			return "", nil, "", nil, err
		}
		for _, t := range tasks {
			var params map[string]any
			if json.Unmarshal(t.Params, &params) != nil || params == nil || !target.matches(params) {
				continue
			}
			if current == "" {
				current, curParams = t.ID, params
				continue
			}
			if target.state(params) != target.state(curParams) {
				previous, prevParams = t.ID, params
				break
			}
		}
		if next == "" {
			break
		}
		before = next
	}
	return current, curParams, previous, prevParams, nil
}
