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

// promotionOrder orders environments as promotions go: each chain of
// promote_to from its start (an environment nothing promotes into), chains
// by their start's name, then the rest by name. Staging comes before
// production.
func promotionOrder(rules *environment.Rules, envs []string) []string {
	into := map[string]bool{}
	for _, e := range envs {
		if r := rules.Get(e); r != nil && r.PromoteTo != "" {
			into[r.PromoteTo] = true
		}
	}
	sorted := slices.Sorted(slices.Values(envs))
	var out []string
	for _, start := range sorted {
		if into[start] {
			continue
		}
		for e := start; e != "" && slices.Contains(envs, e) && !slices.Contains(out, e); {
			out = append(out, e)
			r := rules.Get(e)
			if r == nil {
				break
			}
			e = r.PromoteTo
		}
	}
	for _, e := range sorted { // cycles, and what only a cycle reaches
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
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
	from := ""
	for _, env := range envs { // in promotion order: the first that promotes here
		if r := rules.Get(env); r != nil && r.PromoteTo == c.Env {
			from = env
			break
		}
	}
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
