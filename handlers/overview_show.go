package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/internal/words"
	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/environment"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// overviewShow is the environment overview (GET /overview): every target
// of the viewer's teams × environment, live over /overview/ws.
func (h *Handler) overviewShow(c echo.Context) error {
	p, err := h.loadOverview(c.Request().Context(), userOf(c))
	if err != nil {
		return err
	}
	p.CSRFToken = csrfToken(c)
	return h.render(c, http.StatusOK, "Overview", "overview", pages.Overview(p))
}

// overviewKey groups a pipeline's targets by their params but the
// environment: one row of the overview.
type overviewKey struct{ teamID, pipeline, rest string }

// loadOverview reads what the overview shows to u. Every number comes
// from the stores the environments page and the submit read: the current
// deploy is EnvironmentList's, readiness is saga.PromotionReadiness (the
// rules ProtectDeploy applies), never a rule of its own.
func (h *Handler) loadOverview(ctx context.Context, u *auth.User) (pages.OverviewProps, error) {
	var p pages.OverviewProps
	envs, err := h.store.EnvironmentList(ctx, store.EnvironmentListParams{TeamIDs: u.TeamIDs()})
	if err != nil {
		return p, err
	}
	health, err := h.store.LocalHealthList(ctx, u.TeamIDs())
	if err != nil {
		return p, err
	}
	hosts := map[string]store.LocalHostHealth{}
	for _, hh := range health {
		hosts[hh.TeamID+" "+hh.Host] = hh
	}
	var canaries []store.LocalCanary
	for _, id := range u.TeamIDs() {
		cs, err := h.store.LocalCanaryList(ctx, id)
		if err != nil {
			return p, err
		}
		canaries = append(canaries, cs...)
	}
	shares := canaryShares(canaries)
	// What runs and waits, one read for every target.
	var open []string
	for _, e := range envs {
		if e.Running != nil {
			open = append(open, *e.Running)
		}
		open = append(open, e.WaitingIDs...)
	}
	tasks, err := h.store.TaskGetMany(ctx, u.TeamIDs(), open)
	if err != nil {
		return p, err
	}
	byID := map[string]*task.Task{}
	for _, t := range tasks {
		byID[t.ID] = t
	}
	rules := h.pipelines.Environments()
	now := time.Now()

	rows := map[overviewKey]map[string]overviewSrc{} // by environment
	var order []overviewKey
	pipeEnvs := map[string]map[string]bool{}
	for _, e := range envs {
		pl, _ := h.pipelines.Get(e.Pipeline)
		var target map[string]any
		if pl == nil || pl.EnvironmentParam() == "" || json.Unmarshal([]byte(e.TargetKey), &target) != nil {
			continue // no environments to lay out
		}
		env := pl.EnvironmentOf(target)
		if env == "" {
			continue
		}
		rest := maps.Clone(target)
		delete(rest, pl.EnvironmentParam())
		k := overviewKey{e.TeamID, e.Pipeline, pl.TargetKey(rest)}
		if rows[k] == nil {
			rows[k] = map[string]overviewSrc{}
			order = append(order, k)
		}
		rows[k][env] = overviewSrc{e, target}
		if pipeEnvs[e.Pipeline] == nil {
			pipeEnvs[e.Pipeline] = map[string]bool{}
		}
		pipeEnvs[e.Pipeline][env] = true
	}
	slices.SortStableFunc(order, func(a, b overviewKey) int {
		return strings.Compare(a.pipeline+"\x00"+a.rest+"\x00"+a.teamID, b.pipeline+"\x00"+b.rest+"\x00"+b.teamID)
	})
	for _, k := range order {
		pl, _ := h.pipelines.Get(k.pipeline)
		if n := len(p.Pipelines); n == 0 || p.Pipelines[n-1].Name != k.pipeline {
			p.Pipelines = append(p.Pipelines, pages.OvPipeline{Name: k.pipeline, Envs: envOrder(rules, pipeEnvs[k.pipeline])})
		}
		group := &p.Pipelines[len(p.Pipelines)-1]
		cells := rows[k]
		var anyCell overviewSrc
		for _, c := range cells {
			anyCell = c
			break
		}
		rest := maps.Clone(anyCell.target)
		delete(rest, pl.EnvironmentParam())
		row := pages.OvRow{Team: anyCell.env.Team, Target: strings.Join(pairsOf(rest), " ")}
		for _, env := range group.Envs {
			cell := pages.OvCell{Env: env}
			src, ok := cells[env]
			if ok {
				e := src.env
				cell.Current = envDeploy(pl, e.TargetKey, e.Current, now)
				if hh, ok := hosts[e.TeamID+" "+localHost(e.TargetKey)]; ok {
					cell.Health = envHealth(hh, now)
				}
				if cs, ok := shares[localHost(e.TargetKey)]; ok {
					cell.Canary = fmt.Sprintf("%s at %d %%", cs.Version, cs.Weight)
				}
				ids := e.WaitingIDs
				if e.Running != nil {
					ids = append([]string{*e.Running}, ids...)
				}
				for _, id := range ids {
					if t := byID[id]; t != nil {
						cell.Activity = append(cell.Activity, pages.OvActivity{TaskID: id, Version: taskVersion(pl, t),
							State: strings.ReplaceAll(string(t.State), "_", " ")})
					}
				}
			}
			api, err := saga.APIFreezes(ctx, h.store, k.teamID, env, now)
			if err != nil {
				return p, err
			}
			if hold, frozen := rules.Get(env).Frozen(api, now); frozen {
				cell.Frozen = "frozen until " + words.At(hold.Until, now)
			}
			if err := h.overviewPromote(ctx, u, pl, rules, k, env, cells, row.Team, &cell, now); err != nil {
				return p, err
			}
			row.Cells = append(row.Cells, cell)
		}
		group.Rows = append(group.Rows, row)
	}
	return p, nil
}

// overviewSrc is one environment's target of a row.
type overviewSrc struct {
	env    store.Environment
	target map[string]any
}

// overviewPromote fills in whether the current version of the environment
// that promotes into env (its promote_to) may go there now, by the rules
// a submit meets (saga.PromotionReadiness).
func (h *Handler) overviewPromote(ctx context.Context, u *auth.User, pl *pipeline.Pipeline, rules *environment.Rules, k overviewKey,
	env string, cells map[string]overviewSrc, team string, cell *pages.OvCell, now time.Time) error {
	from := promoteSource(rules, env, cells)
	if from == nil {
		return nil
	}
	src, ok := cells[from.Name]
	pr := &pages.OvPromote{Pipeline: pl.Name, Team: team, From: from.Name, To: env, Target: map[string]string{},
		CanDeploy: u.May(k.teamID, task.ActSubmit)}
	cell.Promote = pr
	if !ok || src.env.Current == nil {
		pr.State, pr.Text = saga.ReadyNotInSource, "nothing deployed in "+from.Name
		pr.Why = pr.Text + " to promote"
		return nil
	}
	pr.Version = envDeploy(pl, src.env.TargetKey, src.env.Current, now).Version
	for kk, v := range src.target {
		if kk != pl.EnvironmentParam() {
			pr.Target[kk] = fmt.Sprint(v)
		}
	}
	if cell.Current != nil && cell.Current.Version == pr.Version {
		pr.State, pr.Text = saga.ReadyThere, pr.Version+" is already here"
		return nil
	}
	r, err := saga.PromotionReadiness(ctx, h.store, pl, k.teamID, src.target, pr.Version, env, rules, now)
	if err != nil {
		return err
	}
	pr.State, pr.Why = r.State, r.Why
	switch r.State {
	case saga.ReadyNow:
		pr.Text = "ready to promote"
	case saga.ReadySoaking:
		pr.Text = "soaking until " + words.At(r.Until, now)
	case saga.ReadyFrozen:
		pr.Text = "frozen until " + words.At(r.Until, now)
	case saga.ReadyNotInSource:
		pr.Text = "not in " + from.Name
	default:
		pr.Text = "not accepted here"
	}
	if !pr.CanDeploy && r.State == saga.ReadyNow {
		pr.Why = "deploying " + task.WhyNot(task.ActSubmit) + " in the team"
	}
	return nil
}

// envOrder lays out present environments in promotion order: those on a
// promote_to chain by how far along it they are (staging before
// production; two sources of one environment side by side, by name),
// then the rest by name. An environment of a chain nobody deployed to yet
// keeps its column when a present one promotes into it: the cell says
// what may come.
func envOrder(rules *environment.Rules, present map[string]bool) []string {
	all := rules.All()
	chain := map[string]bool{}
	for _, e := range all {
		if e.PromoteTo != "" {
			chain[e.Name], chain[e.PromoteTo] = true, true
		}
	}
	// depth: the longest way into an environment; at most len(all) rounds,
	// so a cycle in the rules cannot loop.
	depth := map[string]int{}
	for range len(all) {
		changed := false
		for _, e := range all {
			if e.PromoteTo != "" && depth[e.PromoteTo] < depth[e.Name]+1 && depth[e.Name]+1 <= len(all) {
				depth[e.PromoteTo], changed = depth[e.Name]+1, true
			}
		}
		if !changed {
			break
		}
	}
	shown := maps.Clone(present)
	for _, e := range all {
		if e.PromoteTo != "" && present[e.Name] {
			shown[e.PromoteTo] = true
		}
	}
	out := slices.Sorted(maps.Keys(shown))
	slices.SortStableFunc(out, func(a, b string) int {
		if chain[a] != chain[b] {
			if chain[a] {
				return -1
			}
			return 1
		}
		return depth[a] - depth[b]
	})
	return out
}

// taskVersion is the version a task deploys, as envDeploy says it.
func taskVersion(pl *pipeline.Pipeline, t *task.Task) string {
	if pl == nil || pl.VersionParam() == "" {
		return ""
	}
	var params map[string]any
	_ = json.Unmarshal(t.Params, &params)
	if v, ok := params[pl.VersionParam()]; ok {
		return fmt.Sprint(v)
	}
	return ""
}

// promoteSource is the environment whose version a promotion into env
// would take: the one env requires when it promotes into env, else one
// with a deploy of the row, else the first by name (nil: none promotes
// into env).
func promoteSource(rules *environment.Rules, env string, cells map[string]overviewSrc) *environment.Env {
	var cands []*environment.Env
	for _, e := range rules.All() {
		if e.PromoteTo == env {
			cands = append(cands, e)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	slices.SortFunc(cands, func(a, b *environment.Env) int { return strings.Compare(a.Name, b.Name) })
	if to := rules.Get(env); to != nil && to.Requires != nil {
		for _, e := range cands {
			if e.Name == to.Requires.Env {
				return e
			}
		}
	}
	for _, e := range cands {
		if c, ok := cells[e.Name]; ok && c.env.Current != nil {
			return e
		}
	}
	return cands[0]
}
