package handlers

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/words"
	"flightdeck/views/pages"
	"flightdeck/workflow/environment"
	"flightdeck/workflow/pipeline"
)

// overviewShow is the console at a glance: every target × environment of
// the viewer's teams, environments in promotion order, each cell what runs
// there and whether the version to its left may be promoted into it now.
func (h *Handler) overviewShow(c echo.Context) error {
	filter := c.QueryParam("pipeline")
	ep, err := h.environmentsProps(c, filter, "")
	if err != nil {
		return err
	}
	p := overviewOf(ep, h.pipelines, time.Now())
	p.CSRFToken, p.Filter, p.Names = ep.CSRFToken, filter, ep.Names
	return h.render(c, http.StatusOK, "Overview", "overview", pages.Overview(p))
}

// overviewOf arranges the environments page's targets as the overview's
// grid: a row per target without its environment, a column per
// environment, in promotion order.
func overviewOf(ep pages.EnvironmentsProps, catalog *pipeline.Catalog, now time.Time) pages.OverviewProps {
	rules := catalog.Environments()
	type rowKey struct{ team, pipeline, target string }
	var p pages.OverviewProps
	rows := map[rowKey]int{}
	cells := map[rowKey]map[string]*pages.EnvTarget{}
	var envs []string
	for _, g := range ep.Pipelines {
		envParam := ""
		if pl, ok := catalog.Get(g.Name); ok {
			envParam = pl.EnvironmentParam()
		}
		for i := range g.Targets {
			t := &g.Targets[i]
			var rest []string
			for _, kv := range t.TargetPairs {
				if k, _, _ := strings.Cut(kv, "="); k != envParam || envParam == "" {
					rest = append(rest, kv)
				}
			}
			env := t.Environment
			if env == "" {
				env = "(no environment)"
			}
			k := rowKey{t.Team, g.Name, strings.Join(rest, " ")}
			if _, ok := rows[k]; !ok {
				rows[k] = len(p.Rows)
				p.Rows = append(p.Rows, pages.OverviewRow{Team: t.Team, Pipeline: g.Name, Target: cmp.Or(k.target, "(one target)")})
				cells[k] = map[string]*pages.EnvTarget{}
			}
			cells[k][env] = t
			if !slices.Contains(envs, env) {
				envs = append(envs, env)
			}
			// where it promotes shows too: an empty production beside staging
			if e := rules.Get(env); e != nil && e.PromoteTo != "" && !slices.Contains(envs, e.PromoteTo) {
				envs = append(envs, e.PromoteTo)
			}
		}
	}
	p.Envs = promotionOrder(rules, envs)
	for k, i := range rows {
		r := &p.Rows[i]
		for _, env := range p.Envs {
			t := cells[k][env]
			c := pages.OverviewCell{Env: env, Deploy: t}
			if t != nil {
				c.Running, c.Waiting, c.Frozen = t.Running, t.Waiting, t.Frozen
			}
			if c.Frozen == nil {
				c.Frozen = activeFreeze(ep.Freezes, env, now)
			}
			readiness(&c, rules, p.Envs, cells[k], now)
			r.Cells = append(r.Cells, c)
		}
	}
	slices.SortFunc(p.Rows, func(a, b pages.OverviewRow) int {
		return strings.Compare(a.Pipeline+"\x00"+a.Target+"\x00"+a.Team, b.Pipeline+"\x00"+b.Target+"\x00"+b.Team)
	})
	return p
}

// promotionOrder orders environments as promotions go: an environment on
// a promote_to chain after every one that promotes into it (by the longest
// way in: dev, staging, production; two sources of one environment side
// by side, by name, both before it), then the rest by name. Following
// each chain from its start instead put production before a second
// source (e2e-frozen, e2e-prod, e2e-staging). A cycle in the rules ends.
func promotionOrder(rules *environment.Rules, envs []string) []string {
	chain := map[string]bool{}
	depth := map[string]int{}
	for _, e := range envs {
		if r := rules.Get(e); r != nil && r.PromoteTo != "" && slices.Contains(envs, r.PromoteTo) {
			chain[e], chain[r.PromoteTo] = true, true
		}
	}
	for range len(envs) { // at most one round per environment: a cycle stops
		changed := false
		for _, e := range envs {
			if r := rules.Get(e); r != nil && chain[r.PromoteTo] && depth[r.PromoteTo] < depth[e]+1 && depth[e]+1 < len(envs) {
				depth[r.PromoteTo], changed = depth[e]+1, true
			}
		}
		if !changed {
			break
		}
	}
	out := slices.Sorted(slices.Values(envs))
	out = slices.Compact(out)
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

// activeFreeze is the freeze holding env now (the longest), nil for none.
func activeFreeze(fs []pages.EnvFreeze, env string, now time.Time) *pages.EnvFreeze {
	var out *pages.EnvFreeze
	for i, f := range fs {
		if f.Environment == env && !f.From.After(now) && f.Until.After(now) && (out == nil || f.Until.After(out.Until)) {
			out = &fs[i]
		}
	}
	return out
}

// readiness says whether the current version of the environment that
// promotes into c's may be promoted into it now, by the rules a submit
// applies (environment.Env's freeze and promotion gate): ready, current
// (it runs there already), soaking, frozen, or missing (the source has
// none). A cell nothing promotes into has none.
func readiness(c *pages.OverviewCell, rules *environment.Rules, envs []string, row map[string]*pages.EnvTarget, now time.Time) {
	from := promoteSource(c.Env, rules, envs, row)
	if from == "" {
		return
	}
	var cur *pages.EnvDeploy
	if src := row[from]; src != nil {
		c.Promote, cur = src.Promote, src.Current
	}
	switch {
	case cur == nil:
		c.Ready, c.ReadyText = "missing", "nothing in "+from+" to promote"
		return
	case c.Deploy != nil && c.Deploy.Current != nil && c.Deploy.Current.Version == cur.Version:
		c.Ready, c.ReadyText = "current", cur.Version+" from "+from+" runs here"
		return
	case c.Frozen != nil:
		c.Ready, c.ReadyText = "frozen", "frozen until "+words.At(c.Frozen.Until, now)+": "+cur.Version+" from "+from+" waits"
		return
	}
	if e := rules.Get(c.Env); e != nil && e.Versions != nil && !e.VersionOK(cur.Version) {
		c.Ready, c.ReadyText = "refused", c.Env+" does not take version "+cur.Version
		return
	}
	if e := rules.Get(c.Env); e != nil && e.Requires != nil && e.Requires.Env == from {
		finished := cur.FinishedAt
		if ok, _ := e.PromotionCheck(cur.Version, &finished, now); !ok {
			c.Ready, c.ReadyText = "soaking", cur.Version+" soaks in "+from+" until "+words.At(finished.Add(e.Requires.Soak), now)
			return
		}
	}
	c.Ready, c.ReadyText = "ready", cur.Version+" from "+from+" is ready to promote"
}

// promoteSource is the environment whose version a promotion into env
// takes: the one env requires (its promotion gate) when it promotes here,
// else the first in promotion order with a deploy of the row (one whose
// version does not run here yet first), else the first that promotes here; "" when none does. With two sources (staging
// and hotfix into production) the first by name alone may have nothing.
func promoteSource(env string, rules *environment.Rules, envs []string, row map[string]*pages.EnvTarget) string {
	var cands []string
	for _, e := range envs {
		if r := rules.Get(e); r != nil && r.PromoteTo == env {
			cands = append(cands, e)
		}
	}
	if len(cands) == 0 {
		return ""
	}
	if to := rules.Get(env); to != nil && to.Requires != nil && slices.Contains(cands, to.Requires.Env) {
		return to.Requires.Env
	}
	// A source whose version runs here already has nothing to promote:
	// prefer one that would change something.
	here := ""
	if t := row[env]; t != nil && t.Current != nil {
		here = t.Current.Version
	}
	for _, e := range cands {
		if t := row[e]; t != nil && t.Current != nil && t.Current.Version != here {
			return e
		}
	}
	for _, e := range cands {
		if t := row[e]; t != nil && t.Current != nil {
			return e
		}
	}
	return cands[0]
}
