package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/testfactory"
	"flightdeck/workflow/pipeline"
)

// envDeploy deploys to a target (app, env) by version, with a secret; the
// version "hold" waits for an approval, so it keeps running until decided.
func envPipeline() *pipeline.Pipeline {
	return &pipeline.Pipeline{Name: "env-deploy",
		Params: []pipeline.Param{
			{Name: "app", Type: "string", Pattern: "^[a-z]+$", Required: true},
			{Name: "version", Type: "string", Pattern: "^[a-z0-9.]+$", Required: true},
			{Name: "env", Type: "enum", Values: []string{"staging", "production"}, Default: "staging"},
			{Name: "db_password", Type: "string", Pattern: "^[A-Za-z0-9-]+$", Secret: true},
		},
		Concurrency: &pipeline.Concurrency{},
		Steps: []pipeline.Step{{Name: "release", Action: "test.record",
			Approval: &pipeline.Approval{When: `{{ eq .params.version "hold" }}`}}},
	}
}

// envBundle is a server with env-deploy, a worker pool, and more people of
// acme: carol deploys, vic views.
type envBundle struct {
	*secretBundle
	carolToken, vicToken string
}

func setupEnvironments(t *testing.T) *envBundle {
	t.Helper()
	eb := &envBundle{secretBundle: setupRecording(t, envPipeline())}
	for _, p := range []struct {
		email string
		role  auth.Role
		token *string
	}{{"carol@acme.test", auth.RoleDeployer, &eb.carolToken}, {"vic@acme.test", auth.RoleViewer, &eb.vicToken}} {
		testfactory.User(t, eb.store, p.email, "acme", p.role)
		secret, h := auth.NewSecret(auth.TokenPrefix)
		require.NoError(t, eb.store.TokenCreate(t.Context(), p.email, "test", h))
		*p.token = secret
	}
	return eb
}

// deploy submits env-deploy as alice and returns the task id.
func (eb *envBundle) deploy(t *testing.T, app, version string) string {
	t.Helper()
	r := eb.api(t, http.MethodPost, "/api/v1/tasks", eb.aliceToken,
		`{"kind":"deploy","pipeline":"env-deploy","params":{"app":"`+app+`","version":"`+version+`","db_password":"`+testSecret+`"}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	return r.body["id"].(string)
}

// environments lists alice's environments, by app.
func (eb *envBundle) environments(t *testing.T, token, query string) map[string]map[string]any {
	t.Helper()
	r := eb.api(t, http.MethodGet, "/api/v1/environments"+query, token, "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.NotContains(t, r.raw, testSecret)
	out := map[string]map[string]any{}
	for _, e := range r.body["environments"].([]any) {
		env := e.(map[string]any)
		out[env["target"].(map[string]any)["app"].(string)] = env
	}
	return out
}

func deployedID(env map[string]any, which string) any {
	d, ok := env[which].(map[string]any)
	if !ok {
		return nil
	}
	return d["task_id"]
}

func TestEnvironments(t *testing.T) {
	t.Parallel()
	eb := setupEnvironments(t)

	v1 := eb.deploy(t, "shop", "1.0.0")
	eb.waitState(t, v1, "completed")
	v2 := eb.deploy(t, "shop", "2.0.0")
	eb.waitState(t, v2, "completed")

	shop := eb.environments(t, eb.aliceToken, "")["shop"]
	require.Equal(t, "env-deploy", shop["pipeline"])
	require.Equal(t, map[string]any{"app": "shop", "env": "staging"}, shop["target"], "the target: the params but version and secrets")
	require.Equal(t, v2, deployedID(shop, "current"))
	require.Equal(t, v1, deployedID(shop, "previous"))
	cur := shop["current"].(map[string]any)
	require.Equal(t, map[string]any{"app": "shop", "version": "2.0.0", "env": "staging", "db_password": "[REDACTED]"}, cur["params"])
	require.Equal(t, "alice@acme.test", cur["created_by"])
	require.NotEmpty(t, cur["finished_at"])
	require.Nil(t, shop["running"])
	require.EqualValues(t, 0, shop["waiting"])

	t.Run("SameParamsAgainKeepPrevious", func(t *testing.T) {
		again := eb.deploy(t, "shop", "2.0.0")
		eb.waitState(t, again, "completed")
		shop := eb.environments(t, eb.aliceToken, "?pipeline=env-deploy")["shop"]
		require.Equal(t, again, deployedID(shop, "current"))
		require.Equal(t, v1, deployedID(shop, "previous"), "previous is the last deploy whose params differ")
	})

	t.Run("RunningAndWaiting", func(t *testing.T) {
		held := eb.deploy(t, "cart", "hold")
		eb.waitState(t, held, "awaiting_approval")
		queued := eb.deploy(t, "cart", "3.0.0")
		cart := eb.environments(t, eb.aliceToken, "")["cart"]
		require.Equal(t, held, cart["running"])
		require.EqualValues(t, 1, cart["waiting"])
		require.Nil(t, cart["current"], "no deploy of cart has completed")
		require.Nil(t, cart["previous"])

		r := eb.api(t, http.MethodGet, "/api/v1/environments?history=3", eb.aliceToken, "", nil)
		require.Equal(t, http.StatusOK, r.status)
		r = eb.api(t, http.MethodGet, "/api/v1/environments?history=-1", eb.aliceToken, "", nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.status)

		// A re-run of a task that has not finished is a conflict.
		r = eb.api(t, http.MethodPost, "/api/v1/tasks/"+queued+"/rerun", eb.aliceToken, "", nil)
		require.Equal(t, http.StatusConflict, r.status, r.raw)
		code, _ := errCode(r)
		require.Equal(t, "conflict", code)
	})

	t.Run("OtherTeamsSeeNothing", func(t *testing.T) {
		require.Empty(t, eb.environments(t, eb.bobToken, ""))
		require.Empty(t, eb.environments(t, eb.aliceToken, "?pipeline=noop"))
	})

	t.Run("Rerun", func(t *testing.T) {
		r := eb.api(t, http.MethodPost, "/api/v1/tasks/"+v1+"/rerun", eb.carolToken, "", nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		require.NotContains(t, r.raw, testSecret)
		id := r.body["id"].(string)
		require.NotEqual(t, v1, id)
		require.Equal(t, v1, r.body["rerun_of"])
		require.Equal(t, "carol@acme.test", r.body["created_by"])
		require.Equal(t, "deploy", r.body["kind"])
		require.Equal(t, "env-deploy", r.body["pipeline"])
		require.Equal(t, map[string]any{"app": "shop", "version": "1.0.0", "env": "staging", "db_password": "[REDACTED]"}, r.body["params"])
		eb.waitState(t, id, "completed")
		require.Equal(t, testSecret, eb.ranWith(t, id)["db_password"], "the re-run runs with the original's secret")

		// The re-run of an earlier version is a rollback: it is current,
		// and what it replaced is previous.
		shop := eb.environments(t, eb.aliceToken, "")["shop"]
		require.Equal(t, id, deployedID(shop, "current"))
		prev := deployedID(shop, "previous")
		require.NotEqual(t, v1, prev)

		get := eb.api(t, http.MethodGet, "/api/v1/tasks/"+v1, eb.aliceToken, "", nil)
		require.Nil(t, get.body["rerun_of"], "an original task re-runs nothing")
	})

	t.Run("PageShowsTargetsAndRollsBack", func(t *testing.T) {
		c := eb.browser(t)
		eb.login(t, c, "alice@acme.test", testPassword)
		res, body := eb.get(t, c, "/environments?pipeline=env-deploy", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.NotContains(t, body, testSecret)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		shop := doc.Find(`[data-testid="environment"][data-target="app=shop env=staging"]`)
		require.Equal(t, 1, shop.Length())
		// Deploy times are shown as on the task list (pages.Ago): relative,
		// exact on hover, kept current by app.js.
		times := shop.Find("time")
		require.Greater(t, times.Length(), 2, "current, previous and history")
		require.Equal(t, times.Length(), shop.Find("time[data-ago]").Length())
		at, err := time.Parse(time.RFC3339, times.First().AttrOr("datetime", ""))
		require.NoError(t, err)
		require.Equal(t, at.UTC().Format("2006-01-02 15:04:05 UTC"), times.First().AttrOr("title", ""))
		require.Equal(t, "just now", times.First().Text())
		cart := doc.Find(`[data-testid="environment"][data-target="app=cart env=staging"]`)
		require.Contains(t, cart.Find(`[data-testid="env-running"]`).AttrOr("href", ""), "/tasks/")
		require.Equal(t, 1, cart.Find(`[data-testid="env-waiting"]`).Length())
		// Every column is headed; after the roll back to 1.0.0 the previous
		// deploy is the newer 2.0.0, which is redeployed, not "rolled back to".
		doc.Find(`[data-testid="environments"] th`).Each(func(_ int, th *goquery.Selection) {
			require.NotEmpty(t, strings.TrimSpace(th.Text()))
		})
		require.Equal(t, "Redeploy 2.0.0", strings.TrimSpace(shop.Find(`[data-testid="env-rollback"]`).Text()))
		rollback := shop.Find(`[data-testid="env-rollback"]`).Closest("form")
		action, ok := rollback.Attr("action")
		require.True(t, ok, "a deployer may roll back")
		tok := rollback.Find(`input[name="_csrf"]`).AttrOr("value", "")

		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, eb.srv.URL+action, strings.NewReader(url.Values{"_csrf": {tok}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err = c.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		rolled := strings.TrimPrefix(res.Header.Get("Location"), "/tasks/")
		r := eb.api(t, http.MethodGet, "/api/v1/tasks/"+rolled, eb.aliceToken, "", nil)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		require.Equal(t, strings.TrimSuffix(strings.TrimPrefix(action, "/tasks/"), "/rerun"), r.body["rerun_of"])
		eb.waitState(t, rolled, "completed")
	})

	t.Run("RerunIsIdempotentWithAKey", func(t *testing.T) {
		key := map[string]string{"Idempotency-Key": "rerun-v2"}
		first := eb.api(t, http.MethodPost, "/api/v1/tasks/"+v2+"/rerun", eb.aliceToken, "", key)
		require.Equal(t, http.StatusAccepted, first.status, first.raw)
		again := eb.api(t, http.MethodPost, "/api/v1/tasks/"+v2+"/rerun", eb.aliceToken, "", key)
		require.Equal(t, http.StatusOK, again.status, again.raw)
		require.Equal(t, first.body["id"], again.body["id"])
		other := eb.api(t, http.MethodPost, "/api/v1/tasks/"+v1+"/rerun", eb.aliceToken, "", key)
		require.Equal(t, http.StatusConflict, other.status)
		code, _ := errCode(other)
		require.Equal(t, "idempotency_conflict", code)
	})

	t.Run("RerunRights", func(t *testing.T) {
		r := eb.api(t, http.MethodPost, "/api/v1/tasks/"+v1+"/rerun", eb.vicToken, "", nil)
		require.Equal(t, http.StatusForbidden, r.status, r.raw)
		r = eb.api(t, http.MethodPost, "/api/v1/tasks/"+v1+"/rerun", eb.bobToken, "", nil)
		require.Equal(t, http.StatusNotFound, r.status, r.raw)
		r = eb.api(t, http.MethodPost, "/api/v1/tasks/not-a-task/rerun", eb.aliceToken, "", nil)
		require.Equal(t, http.StatusNotFound, r.status, r.raw)
	})

	t.Run("RerunOfWhatNoLongerValidates", func(t *testing.T) {
		u, _, err := eb.store.UserGetByEmail(t.Context(), "alice@acme.test")
		require.NoError(t, err)
		// Stored as a deploy of a pipeline since removed, and as one whose
		// params the pipeline no longer takes: the worker fails both.
		gone := testfactory.Task(t, eb.store, u, &testfactory.TaskOpts{Pipeline: "retired"})
		bad := testfactory.Task(t, eb.store, u, &testfactory.TaskOpts{Pipeline: "env-deploy", Params: json.RawMessage(`{"app":"Shop!","version":"1"}`)})
		for id, field := range map[string]string{gone.ID: "pipeline", bad.ID: "params.app"} {
			require.Eventually(t, func() bool {
				tk, err := eb.store.TaskGet(t.Context(), u.TeamIDs(), id)
				return err == nil && tk.State.Terminal()
			}, 30*time.Second, 20*time.Millisecond)
			r := eb.api(t, http.MethodPost, "/api/v1/tasks/"+id+"/rerun", eb.aliceToken, "", nil)
			require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
			code, f := errCode(r)
			require.Equal(t, "invalid", code)
			require.Equal(t, field, f, r.raw)
		}
	})
}
