package saga

import (
	"context"
	"fmt"
	"time"

	"flightdeck/internal/words"
	"flightdeck/store"
	"flightdeck/workflow/environment"
	"flightdeck/workflow/pipeline"
)

// Readiness states: whether a version may be promoted into an environment
// now, by the rules ProtectDeploy applies at submit.
const (
	ReadyNow         = "ready"
	ReadySoaking     = "soaking"
	ReadyFrozen      = "frozen"
	ReadyNotInSource = "not_in_source"
	ReadyRefused     = "refused" // the environment does not take the version
	ReadyThere       = "there"   // the version is already current there
)

// Readiness says whether version may go into env now and, when not, why
// and until when (Until is zero when no moment ends the wait).
type Readiness struct {
	State string
	Until time.Time
	Why   string
}

// PromotionReadiness asks the rules a submit of version into env would
// meet (the versions rule, the promotion gate with its soak, freezes), in
// the order ProtectDeploy applies them, without submitting anything: the
// overview shows the answer before anyone clicks Promote. target is the
// deploy's params (its environment param is set to env here); reviewers
// and wait timers do not refuse a submit, so they are not asked.
func PromotionReadiness(ctx context.Context, st *store.Store, p *pipeline.Pipeline, teamID string, target map[string]any,
	version, env string, rules *environment.Rules, now time.Time) (Readiness, error) {
	e := rules.Get(env)
	if e != nil && e.Versions != nil && !e.VersionOK(version) {
		return Readiness{State: ReadyRefused, Why: versionsMessage(env, e.Versions.String(), version)}, nil
	}
	if e != nil && e.Requires != nil {
		other := map[string]any{}
		for k, v := range target {
			other[k] = v
		}
		other[p.EnvironmentParam()] = e.Requires.Env
		at, err := st.TaskVersionCompletedAt(ctx, teamID, p.Name, p.TargetKey(other), p.VersionParam(), version)
		if err != nil {
			return Readiness{}, err
		}
		if ok, why := e.PromotionCheck(version, at, now); !ok {
			if at == nil {
				return Readiness{State: ReadyNotInSource, Why: why}, nil
			}
			return Readiness{State: ReadySoaking, Until: at.Add(e.Requires.Soak), Why: why}, nil
		}
	}
	api, err := APIFreezes(ctx, st, teamID, env, now)
	if err != nil {
		return Readiness{}, err
	}
	if hold, frozen := e.Frozen(api, now); frozen {
		return Readiness{State: ReadyFrozen, Until: hold.Until,
			Why: fmt.Sprintf("%s is frozen (%s) until %s (in %s)", env, hold.Reason, words.At(hold.Until, now), words.Duration(hold.Until.Sub(now)))}, nil
	}
	return Readiness{State: ReadyNow}, nil
}
