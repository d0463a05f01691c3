package handlers

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/internal/words"
	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/environment"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// envHistoryShown is how many completed deploys of each target the page lists.
const envHistoryShown = 10

func (h *Handler) environmentList(c echo.Context) error {
	return h.renderEnvironments(c, http.StatusOK, "")
}

// renderEnvironments renders the environments page, with a refusal to
// show (flash) when a form on it was refused.
func (h *Handler) renderEnvironments(c echo.Context, status int, flash string) error {
	p, err := h.environmentsProps(c, c.QueryParam("pipeline"), flash)
	if err != nil {
		return err
	}
	return h.render(c, status, "Environments", "environments", pages.Environments(p))
}

// environmentsProps reads what the environments page (and the overview,
// which shows the same targets as a grid) shows the viewer: every target
// of filter's pipeline ("" for all), with its current deploy, health,
// canary, freeze and promotion.
func (h *Handler) environmentsProps(c echo.Context, filter, flash string) (pages.EnvironmentsProps, error) {
	u := userOf(c)
	envs, err := h.store.EnvironmentList(c.Request().Context(), store.EnvironmentListParams{
		TeamIDs: u.TeamIDs(), Pipeline: filter, History: envHistoryShown})
	if err != nil {
		return pages.EnvironmentsProps{}, err
	}
	health, err := h.store.LocalHealthList(c.Request().Context(), u.TeamIDs())
	if err != nil {
		return pages.EnvironmentsProps{}, err
	}
	var canaries []store.LocalCanary
	for _, id := range u.TeamIDs() {
		cs, err := h.store.LocalCanaryList(c.Request().Context(), id)
		if err != nil {
			return pages.EnvironmentsProps{}, err
		}
		canaries = append(canaries, cs...)
	}
	shares := canaryShares(canaries)
	hosts := map[string]store.LocalHostHealth{}
	for _, hh := range health {
		hosts[hh.TeamID+" "+hh.Host] = hh
	}
	p := pages.EnvironmentsProps{Pipeline: filter, CSRFToken: csrfToken(c), Flash: flash,
		CanFreeze: len(u.TeamsWhereMay(task.ActManageFreezes)) > 0}
	_, p.KnownEnvironments = h.pipelines.EnvironmentKnown("")
	now := time.Now()
	if err := h.envFreezes(c, &p, now); err != nil {
		return pages.EnvironmentsProps{}, err
	}
	for _, pl := range h.pipelines.All() {
		p.Names = append(p.Names, pl.Name)
	}
	byKey := map[string]*store.Environment{}
	for i := range envs {
		byKey[envs[i].TeamID+"\x00"+envs[i].Pipeline+"\x00"+envs[i].TargetKey] = &envs[i]
	}
	// Each current deploy's skipped steps, in one query.
	var current []string
	for _, e := range envs {
		if e.Current != nil {
			current = append(current, e.Current.TaskID)
		}
	}
	skipped, err := h.store.TaskSkippedSteps(c.Request().Context(), current)
	if err != nil {
		return pages.EnvironmentsProps{}, err
	}
	for _, e := range envs {
		if n := len(p.Pipelines); n == 0 || p.Pipelines[n-1].Name != e.Pipeline {
			p.Pipelines = append(p.Pipelines, pages.EnvPipeline{Name: e.Pipeline})
		}
		group := &p.Pipelines[len(p.Pipelines)-1]
		pl, _ := h.pipelines.Get(e.Pipeline) // nil: a pipeline removed since
		if pl != nil {
			group.VersionParam = pl.VersionParam()
		}
		pairs := targetPairs(pl, e.TargetKey)
		t := pages.EnvTarget{Team: e.Team, Target: strings.Join(pairs, " "), TargetPairs: pairs, Waiting: e.Waiting, WaitingID: e.WaitingIDs,
			CanDeploy: u.May(e.TeamID, task.ActSubmit)}
		if e.Running != nil {
			t.Running = *e.Running
		}
		t.Current, t.Previous = envDeploy(pl, e.TargetKey, e.Current, now), envDeploy(pl, e.TargetKey, e.Previous, now)
		if t.Current != nil {
			t.Current.Skipped = skipped[t.Current.TaskID]
		}
		for _, d := range e.History {
			v := envDeploy(pl, e.TargetKey, &d, now)
			v.Current = e.Current != nil && d.TaskID == e.Current.TaskID
			t.History = append(t.History, *v)
		}
		t.Rollback = previousIsOlder(t)
		if hh, ok := hosts[e.TeamID+" "+localHost(e.TargetKey)]; ok {
			t.Health = envHealth(hh, now)
			if hh.Serving {
				t.AppURL = h.localAppURL(hh.Host)
			}
		}
		if host := localHost(e.TargetKey); host != "" {
			if cs, ok := shares[host]; ok {
				t.CanaryHost, t.CanaryVersion, t.CanaryWeight = host, cs.Version, cs.Weight
			} else if t.Running != "" {
				t.CanaryHost = host // a canary may start: the page asks
			}
		}
		if pl != nil {
			h.envProtection(c, u, pl, e, &t, p.Freezes, byKey)
		}
		group.Targets = append(group.Targets, t)
	}
	return p, nil
}

// envFreezes lists the freezes on the page.
func (h *Handler) envFreezes(c echo.Context, p *pages.EnvironmentsProps, now time.Time) error {
	fs, err := h.freezes(c, now)
	if err != nil {
		return err
	}
	u := userOf(c)
	mayEnd := map[string]bool{}
	for _, id := range u.TeamsWhereMay(task.ActManageFreezes) {
		mayEnd[id] = true
	}
	for _, f := range fs {
		if f.Source == "rule" {
			continue // one row per window, below
		}
		ef := pages.EnvFreeze{Environment: f.Environment, From: f.From, Until: f.Until, Reason: f.Reason, Source: f.Source,
			Active: !f.From.After(now) && f.Until.After(now)}
		if f.ID != nil {
			ef.ID = *f.ID
			ef.CanEnd, ef.TeamID = mayEnd[f.teamID], f.teamID
		}
		p.Freezes = append(p.Freezes, ef)
	}
	// A recurring window is one row, said once, with its occurrence now or
	// next (not seven identical rows for a nightly window).
	for _, e := range h.pipelines.Environments().All() {
		for _, w := range e.Freeze {
			spans := (&environment.Env{Freeze: []environment.Window{w}}).Freezes(nil, now, now.Add(freezeHorizon))
			if len(spans) == 0 {
				continue
			}
			s := spans[0]
			p.Freezes = append(p.Freezes, pages.EnvFreeze{Environment: e.Name, From: s.From, Until: s.Until, Reason: w.Reason, Source: "rule",
				Active: !s.From.After(now) && s.Until.After(now), Recurring: words.Recurring(w.Weekly, w.From, w.Text)})
		}
	}
	sort.SliceStable(p.Freezes, func(i, j int) bool { return p.Freezes[i].From.Before(p.Freezes[j].From) })
	return nil
}

// envProtection fills in a target's environment: whether it is frozen
// now and, when its environment promotes somewhere and the viewer may
// deploy, the "Promote to …" offer with what it changes there.
func (h *Handler) envProtection(c echo.Context, u *auth.User, pl *pipeline.Pipeline, e store.Environment, t *pages.EnvTarget,
	freezes []pages.EnvFreeze, byKey map[string]*store.Environment) {
	var target map[string]any
	if json.Unmarshal([]byte(e.TargetKey), &target) != nil {
		return
	}
	t.Environment = pl.EnvironmentOf(target)
	if t.Environment == "" {
		return
	}
	for i, f := range freezes {
		if f.Active && f.Environment == t.Environment && (f.TeamID == "" || f.TeamID == e.TeamID) && (t.Frozen == nil || f.Until.After(t.Frozen.Until)) {
			t.Frozen = &freezes[i]
		}
	}
	rule := h.pipelines.Environments().Get(t.Environment)
	if rule == nil || rule.PromoteTo == "" || e.Current == nil || !t.CanDeploy {
		return
	}
	pr := &pages.EnvPromotion{To: rule.PromoteTo, Pipeline: pl.Name, From: t.Environment, Team: e.Team, Target: map[string]string{},
		Override: u.May(e.TeamID, task.ActOverride)}
	envParam := pl.EnvironmentParam()
	for k, v := range target {
		if k != envParam {
			pr.Target[k] = fmt.Sprint(v)
		}
	}
	var to map[string]any
	_ = json.Unmarshal(e.Current.Params, &to)
	to[envParam] = rule.PromoteTo
	toTarget := maps.Clone(target)
	toTarget[envParam] = rule.PromoteTo
	var from map[string]any
	if there := byKey[e.TeamID+"\x00"+pl.Name+"\x00"+pl.TargetKey(toTarget)]; there != nil && there.Current != nil {
		_ = json.Unmarshal(there.Current.Params, &from)
	}
	d := task.DiffParams(from, to)
	pr.Changes = changeRows(&d)
	t.Promote = pr
}

// previousIsOlder reports whether the target's previous deploy is an older
// version than its current one, which "Roll back" offers; otherwise (after
// a roll back, the previous is the newer version) it is a "Redeploy". A
// version is as old as its first deploy in the history (newest first).
func previousIsOlder(t pages.EnvTarget) bool {
	if t.Current == nil || t.Previous == nil || t.Current.Version == t.Previous.Version {
		return false
	}
	first := map[string]int{}
	for i, d := range t.History {
		first[d.Version] = i
	}
	prev, okPrev := first[t.Previous.Version]
	cur, okCur := first[t.Current.Version]
	return !okPrev || !okCur || prev > cur
}

// localHost is the local provider's host of a target whose key names an
// app and an env ("shop.staging"), the host its actions derive; "" otherwise.
func localHost(targetKey string) string {
	var target map[string]any
	if json.Unmarshal([]byte(targetKey), &target) != nil {
		return ""
	}
	app, okApp := target["app"].(string)
	env, okEnv := target["env"].(string)
	if !okApp || !okEnv {
		return ""
	}
	return app + "." + env
}

// envHealth is what the target's monitor last found, in words.
func envHealth(hh store.LocalHostHealth, now time.Time) *pages.EnvHealth {
	out := &pages.EnvHealth{State: "unmonitored", Text: "no monitor"}
	switch {
	case !hh.Monitored:
	case hh.Healthy == nil:
		out.State, out.Text = "pending", "not checked yet"
	case *hh.Healthy:
		out.State, out.Text = "healthy", "healthy"
	default:
		out.State, out.Text = "unhealthy", "unhealthy"
		if hh.Alert != nil {
			out.Detail = *hh.Alert
		}
	}
	if hh.LastCheckedAt != nil {
		out.CheckedAgo = "checked " + ago(now.Sub(*hh.LastCheckedAt))
	}
	return out
}

// localAppURL is where a deployed app answers: its host under .localhost
// on this server's port (the local provider's reverse proxy).
func (h *Handler) localAppURL(host string) string {
	u, err := url.Parse(h.cfg.PublicURL())
	if err != nil {
		return ""
	}
	port := u.Port()
	u.Host, u.Path = host+".localhost", "/"
	if port != "" {
		u.Host += ":" + port
	}
	return u.String()
}

// envDeploy is d as the page shows it: its version is the pipeline's
// version parameter, or without one the params that are not the target.
func envDeploy(pl *pipeline.Pipeline, targetKey string, d *store.Deployed, now time.Time) *pages.EnvDeploy {
	if d == nil {
		return nil
	}
	out := &pages.EnvDeploy{TaskID: d.TaskID, By: d.CreatedBy, FinishedAt: d.FinishedAt, Ago: ago(now.Sub(d.FinishedAt))}
	var params, target map[string]any
	_ = json.Unmarshal(d.Params, &params)
	_ = json.Unmarshal([]byte(targetKey), &target)
	if pl != nil && pl.VersionParam() != "" {
		out.Version = fmt.Sprint(params[pl.VersionParam()])
		out.VersionURL = pl.VersionURL(params) // "" when the pipeline has no links.version
		return out
	}
	rest := map[string]any{}
	for k, v := range params {
		if _, ok := target[k]; !ok {
			rest[k] = v
		}
	}
	out.Version = strings.Join(pairsOf(rest), " ")
	if out.Version == "" {
		out.Version = "(same parameters)"
	}
	return out
}

// targetPairs is a target key as the page shows it, "app=shop",
// "env=staging": what targetChips shows of it, the rule of the task list,
// the inbox and the run page. A pipeline removed since has no rule left:
// all of the key, sorted.
func targetPairs(pl *pipeline.Pipeline, targetKey string) []string {
	var target map[string]any
	if json.Unmarshal([]byte(targetKey), &target) != nil {
		return []string{targetKey}
	}
	if pl == nil {
		return pairsOf(target)
	}
	return namedChips(targetChips(pl, target))
}

// pairsOf writes m as "k=v" pairs, sorted.
func pairsOf(m map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return out
}
