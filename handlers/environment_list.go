package handlers

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/pipeline"
)

// envHistoryShown is how many completed deploys of each target the page lists.
const envHistoryShown = 10

func (h *Handler) environmentList(c echo.Context) error {
	u := userOf(c)
	filter := c.QueryParam("pipeline")
	envs, err := h.store.EnvironmentList(c.Request().Context(), store.EnvironmentListParams{
		TeamIDs: u.TeamIDs(), Pipeline: filter, History: envHistoryShown})
	if err != nil {
		return err
	}
	health, err := h.store.LocalHealthList(c.Request().Context(), u.TeamIDs())
	if err != nil {
		return err
	}
	hosts := map[string]store.LocalHostHealth{}
	for _, hh := range health {
		hosts[hh.TeamID+" "+hh.Host] = hh
	}
	p := pages.EnvironmentsProps{Pipeline: filter, CSRFToken: csrfToken(c)}
	for _, pl := range h.pipelines.All() {
		p.Names = append(p.Names, pl.Name)
	}
	now := time.Now()
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
			CanDeploy: u.RoleIn(e.TeamID).AtLeast(auth.RoleDeployer)}
		if e.Running != nil {
			t.Running = *e.Running
		}
		t.Current, t.Previous = envDeploy(pl, e.TargetKey, e.Current, now), envDeploy(pl, e.TargetKey, e.Previous, now)
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
		group.Targets = append(group.Targets, t)
	}
	return h.render(c, http.StatusOK, "Environments", "environments", pages.Environments(p))
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
