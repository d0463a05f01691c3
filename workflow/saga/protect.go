package saga

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"flightdeck/internal/words"
	"flightdeck/store"
	"flightdeck/workflow/environment"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// Protection is what a submit brings to the rules of its deploy's
// environment (contract §9).
type Protection struct {
	Rules *environment.Rules
	// Override is a break-glass reason ("" for none); MayOverride says
	// whether the submitter may give one in the team (task.ActOverride),
	// By who it is.
	Override    string
	MayOverride bool
	By          string
	// RunAt is the submit's run_at (nil: as soon as it may).
	RunAt *time.Time
	// PromotedFrom is the deploy a promotion repeats ("" for none).
	PromotedFrom string
}

// Refusal is a submit an environment's rules refuse, with the contract's
// code: invalid (422, Field set), not_promoted, frozen or
// not_enough_reviewers (409; frozen with RetryAfter) or forbidden (403).
type Refusal struct {
	Code       string
	Field      string
	Message    string
	RetryAfter time.Duration
}

func (r *Refusal) Error() string { return r.Message }

// MinOverrideReason is the shortest reason an override takes.
const MinOverrideReason = 10

// ProtectDeploy applies the rules of the deploy's environment to a submit
// that NewDeploy filled in, whichever way it came (the API, the form, a
// re-run, a promotion, an agent's start_deploy): the versions rule, the
// promotion gate, freezes, an admin's override, the reviewers, the wait
// timer and run_at. It refuses with a *Refusal or sets in's state
// (pending, scheduled or awaiting_approval), environment and events.
// params are the validated params (secret ones included).
func ProtectDeploy(ctx context.Context, st *store.Store, in *store.TaskInsertParams, p *pipeline.Pipeline, params map[string]any, o Protection) error {
	env := p.EnvironmentOf(params)
	if env == "" && o.RunAt == nil && o.Override == "" {
		return nil
	}
	now, err := st.Now(ctx)
	if err != nil {
		return err
	}
	if o.RunAt != nil {
		if !o.RunAt.After(now) || o.RunAt.Sub(now) > environment.MaxRunAhead {
			return &Refusal{Code: "invalid", Field: "run_at", Message: "run_at must be in the future and at most 30 days ahead"}
		}
	}
	in.Environment = env
	in.PromotedFrom = o.PromotedFrom
	e := o.Rules.Get(env)
	var pub map[string]any
	_ = json.Unmarshal(in.Params, &pub)

	vp := p.VersionParam()
	version, _ := pub[vp].(string)
	if e != nil && e.Versions != nil && !e.VersionOK(version) {
		return &Refusal{Code: "invalid", Field: "params." + cmpOr(vp, "version"),
			Message: versionsMessage(env, e.Versions.String(), version)}
	}
	if o.Override != "" {
		if !o.MayOverride {
			return &Refusal{Code: "forbidden", Field: "override", Message: "overriding an environment's rules " + task.WhyNot(task.ActOverride) + " in the team"}
		}
		// The one rule for a person's free text (task.PersonText), so the
		// API, the forms and the agent agree: ten spaces are no reason.
		reason, why := task.PersonText(o.Override, MinOverrideReason)
		if why != "" {
			return &Refusal{Code: "invalid", Field: "override.reason", Message: "an override's reason " + why}
		}
		o.Override = reason
		in.Override, _ = json.Marshal(map[string]any{"by": o.By, "reason": o.Override, "at": now.UTC()})
		data, _ := json.Marshal(map[string]any{"by": o.By, "reason": o.Override, "environment": env})
		in.Events = append(in.Events, task.Event{Type: task.EventTaskOverride, Status: task.StatusLog,
			Message: fmt.Sprintf("%s overrode the rules of %s: %s", o.By, env, o.Override), Data: data})
	}
	if env == "" {
		return schedule(in, o.RunAt, now)
	}
	if e != nil && e.Requires != nil && o.Override == "" {
		other := map[string]any{}
		for k, v := range pub {
			other[k] = v
		}
		other[p.EnvironmentParam()] = e.Requires.Env
		at, err := st.TaskVersionCompletedAt(ctx, in.TeamID, p.Name, p.TargetKey(other), vp, version)
		if err != nil {
			return err
		}
		if ok, why := e.PromotionCheck(version, at, now); !ok {
			return &Refusal{Code: "not_promoted", Message: why}
		}
	}
	if o.RunAt == nil && o.Override == "" {
		api, err := APIFreezes(ctx, st, in.TeamID, env, now)
		if err != nil {
			return err
		}
		if hold, frozen := e.Frozen(api, now); frozen {
			wait := hold.Until.Sub(now)
			return &Refusal{Code: "frozen", RetryAfter: wait,
				Message: fmt.Sprintf("%s is frozen (%s) until %s (in %s)", env, hold.Reason, words.At(hold.Until, now), words.Duration(wait))}
		}
	}
	if e == nil || e.Reviewers == nil {
		runAt := o.RunAt
		if e != nil && e.Wait > 0 {
			runAt = later(runAt, now.Add(e.Wait))
		}
		return schedule(in, runAt, now)
	}
	r := e.Reviewers
	if err := enoughReviewers(ctx, st, in, env, r.Count, r.Roles); err != nil {
		return err
	}
	changes, err := currentChanges(ctx, st, in, pub)
	if err != nil {
		return err
	}
	in.State, in.RunAfter = task.StateAwaitingApproval, o.RunAt
	covers, err := coveredSteps(p, params, in, r.Roles)
	if err != nil {
		return err
	}
	in.Reviewers = &store.ReviewersParams{ID: store.NewTaskID(), Environment: env, Required: r.Count, Roles: r.Roles,
		Timeout: r.Timeout, Wait: e.Wait, Changes: changes, Covers: covers}
	data, _ := json.Marshal(map[string]any{"approval_id": in.Reviewers.ID, "kind": "environment", "required": r.Count,
		"roles": r.Roles, "expires_at": now.Add(r.Timeout).UTC()})
	in.Events = append(in.Events, task.Event{Type: task.EventApprovalRequested, Status: task.StatusApproval,
		Message: "Waiting for " + words.Count(int64(r.Count), "reviewer") + " of " + env, Data: data})
	return nil
}

// schedule makes the task wait for runAt (nil: none).
func schedule(in *store.TaskInsertParams, runAt *time.Time, now time.Time) error {
	if runAt == nil || !runAt.After(now) {
		return nil
	}
	in.State, in.RunAfter = task.StateScheduled, runAt
	data, _ := json.Marshal(map[string]any{"state": task.StateScheduled, "run_at": runAt.UTC()})
	in.Events = append(in.Events, task.Event{Type: task.EventTaskState, Status: task.StatusLog,
		Message: "Scheduled to run at " + words.Stamp(*runAt), Data: data}) // kept: no "tomorrow" that goes stale
	return nil
}

// versionsMessage says which versions env takes by an example made from
// its pattern, never the pattern itself (people read it, contract field
// names stay).
func versionsMessage(env, pattern, version string) string {
	if ex := words.Example(pattern); ex != "" {
		return fmt.Sprintf("%s takes a version like %s; %q is not one", env, ex, version)
	}
	return fmt.Sprintf("%s does not take version %q (its rules on the environments page say which it takes)", env, version)
}

func later(a *time.Time, b time.Time) *time.Time {
	if a != nil && a.After(b) {
		return a
	}
	return &b
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// APIFreezes are the team's freezes of env through the API that hold now
// or start within a day (enough for Frozen to follow freezes that touch).
func APIFreezes(ctx context.Context, st *store.Store, teamID, env string, now time.Time) ([]environment.Span, error) {
	fs, err := st.FreezesActiveAt(ctx, teamID, env, now, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	out := make([]environment.Span, len(fs))
	for i, f := range fs {
		out[i] = environment.Span{ID: f.ID, From: f.From, Until: f.Until, Reason: f.Reason, Source: "api"}
	}
	return out, nil
}

// currentChanges is the stored form of what the deploy changes: the
// params of its target's current deploy and its own ({"from","to"};
// fields are worked out when read).
func currentChanges(ctx context.Context, st *store.Store, in *store.TaskInsertParams, pub map[string]any) (json.RawMessage, error) {
	var from json.RawMessage
	if in.TargetKey != "" {
		envs, err := st.EnvironmentList(ctx, store.EnvironmentListParams{TeamIDs: []string{in.TeamID}, Pipeline: in.Pipeline, TargetKey: in.TargetKey})
		if err != nil {
			return nil, err
		}
		if len(envs) == 1 && envs[0].Current != nil {
			from = envs[0].Current.Params
		}
	}
	b, err := json.Marshal(map[string]any{"from": from, "to": json.RawMessage(in.Params)})
	return b, err
}

// Held says whether a task that has not started a step waits on a freeze
// of its environment at now, and until when.
func Held(ctx context.Context, st *store.Store, rules *environment.Rules, t *task.Task, now time.Time) (*task.Held, error) {
	waiting := t.State == task.StatePending || t.State == task.StateScheduled || t.State == task.StateAwaitingApproval
	if t.Environment == "" || !waiting || t.Progress.Step > 0 {
		return nil, nil
	}
	api, err := APIFreezes(ctx, st, t.TeamID, t.Environment, now)
	if err != nil {
		return nil, err
	}
	hold, frozen := rules.Get(t.Environment).Frozen(api, now)
	if !frozen {
		return nil, nil
	}
	return &task.Held{Reason: "frozen", Until: hold.Until.UTC(), Message: hold.Reason}, nil
}

// RetryAfterSeconds is d in whole seconds, at least 1 (a Retry-After header).
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// enoughReviewers refuses a submit whose environment's reviewers can never
// be found: fewer people in the team with the allowed roles, the creator
// left out (four eyes), than the approvals needed. The deploy would
// otherwise wait for the impossible until its reviewers' timeout.
func enoughReviewers(ctx context.Context, st *store.Store, in *store.TaskInsertParams, env string, count int, roles []string) error {
	n, err := st.TeamDeciders(ctx, in.TeamID, roles, in.CreatedByID)
	if err != nil {
		return err
	}
	if n >= count {
		return nil
	}
	may := "nobody else in the team may"
	switch {
	case n == 1:
		may = "only 1 other person in the team may"
	case n > 1:
		may = fmt.Sprintf("only %d other people in the team may", n)
	}
	return &Refusal{Code: "not_enough_reviewers", Message: fmt.Sprintf(
		"a deploy to %s needs %s from people with the role %s other than its creator, and %s approve it: ask an admin to give more people one of those roles",
		env, words.Count(int64(count), "approval"), strings.Join(roles, " or "), may)}
}

// coveredSteps are the step approvals of the deploy that its environment's
// reviewers decide (contract §9): those that will ask (their `when` holds
// for these params, as the run renders it) and whose roles are all among
// the reviewers'. A step approval that asks other roles still asks.
func coveredSteps(p *pipeline.Pipeline, params map[string]any, in *store.TaskInsertParams, reviewerRoles []string) ([]store.CoveredStep, error) {
	stages, _, err := p.Plan(params)
	if err != nil {
		return nil, err
	}
	var out []store.CoveredStep
	for _, st := range stages {
		for _, ps := range st.Steps {
			ap := ps.Step.Approval
			if ap == nil {
				continue
			}
			if ap.When != "" {
				v, err := renderString(ap.When, templateData(in.ID, in.Team, params, ps))
				if err != nil || strings.TrimSpace(v) != "true" {
					continue // the run says why a when does not render
				}
			}
			roles := ap.Roles
			if len(roles) == 0 {
				roles = pipeline.ApprovalRolesDefault
			}
			if !slices.ContainsFunc(roles, func(r string) bool { return !slices.Contains(reviewerRoles, r) }) {
				out = append(out, store.CoveredStep{Idx: ps.Index, Name: ps.Name, Roles: roles})
			}
		}
	}
	return out, nil
}
