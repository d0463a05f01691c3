package handlers_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/notify"
	"flightdeck/internal/testfactory"
	"flightdeck/workflow/action"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// TestOverviewReadiness: the overview shows every target × environment,
// staging before production (promote_to), and says for each environment
// whether the version to its left may be promoted now, by the rules a
// submit applies: ready, soaking until …, frozen until …, or nothing in the
// source. A promotion a rule would refuse is a disabled button with the reason.
func TestOverviewReadiness(t *testing.T) {
	t.Parallel()
	pl, err := pipeline.Parse("svc.yaml", []byte(`name: svc
params:
  - {name: app, type: string, required: true}
  - {name: version, type: string, required: true}
  - {name: env, type: enum, values: [staging, production, qa], default: staging}
steps:
  - {name: one, action: noop}
`))
	require.NoError(t, err)
	catalog, err := pipeline.NewCatalog(append(pipeline.Builtin(), pl)...)
	require.NoError(t, err)
	rules, err := pipeline.ParseEnvironments("environments.yaml", []byte(`environments:
  staging:
    promote_to: production
  qa:
    promote_to: staging
  production:
    requires: {env: staging, soak: 1h}
`))
	require.NoError(t, err)
	catalog.SetEnvironments(rules)
	b := setupCatalog(t, nil, catalog)
	testfactory.User(t, b.store, "ann@acme.test", "acme", auth.RoleAdmin)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := saga.NewRunner(saga.Config{Catalog: catalog, Logger: logger, FlushInterval: 10 * time.Millisecond,
		Actions: action.Registry{"noop": action.Noop}})
	n := notify.NewListener(b.store, nil)
	p := queue.New(b.store, map[task.Kind]queue.Handler{task.KindDeploy: runner}, queue.Config{
		Workers: 2, PollInterval: 20 * time.Millisecond, Grace: 10 * time.Millisecond, Logger: logger})
	p.Attach(n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(ctx) })
	wg.Go(func() { _ = p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	deploy := func(app, env string) {
		r := b.api(t, http.MethodPost, "/api/v1/tasks", b.aliceToken,
			`{"kind":"deploy","pipeline":"svc","params":{"app":"`+app+`","version":"1.0.0","env":"`+env+`"}}`, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		b.waitState(t, r.body["id"].(string), "completed")
	}
	deploy("shop", "staging") // production: soaking for an hour
	deploy("cart", "qa")      // staging: ready; production: nothing in staging

	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	res, page := b.get(t, c, "/overview", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	require.NoError(t, err)
	var envs []string
	doc.Find(".ov-head .ov-env-name").Each(func(_ int, s *goquery.Selection) { envs = append(envs, s.Text()) })
	require.Equal(t, []string{"qa", "staging", "production"}, envs, "promotion order")

	cell := func(target, env string) *goquery.Selection {
		return doc.Find(`[data-testid="overview-row"][data-target="app=` + target + `"] [data-testid="overview-cell"][data-env="` + env + `"]`)
	}
	shopProd := cell("shop", "production")
	require.Equal(t, "soaking", shopProd.AttrOr("data-ready", ""))
	require.Contains(t, shopProd.Find(`[data-testid="overview-ready"]`).Text(), "1.0.0 soaks in staging until")
	disabled := shopProd.Find(`[data-testid="overview-promote-disabled"]`)
	require.Equal(t, 1, disabled.Length(), "a promotion the gate refuses is a disabled button")
	require.Contains(t, disabled.AttrOr("title", ""), "soaks in staging")
	require.Contains(t, cell("shop", "staging").Find(`[data-testid="overview-version"]`).Text(), "1.0.0")

	require.Equal(t, "ready", cell("cart", "staging").AttrOr("data-ready", ""))
	require.Equal(t, 1, cell("cart", "staging").Find(`[data-testid="env-promote-form"]`).Length(), "ready: the promote form")
	require.Equal(t, "missing", cell("cart", "production").AttrOr("data-ready", ""))

	// An admin freezes production: the soaking cell says frozen instead.
	until := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	annToken := b.tokenFor(t, "ann@acme.test", auth.RoleAdmin)
	r := b.api(t, http.MethodPost, "/api/v1/freezes", annToken, `{"environment":"production","until":"`+until+`","reason":"release week"}`, nil)
	require.Equal(t, http.StatusCreated, r.status, r.raw)
	_, page = b.get(t, c, "/overview", nil)
	doc, err = goquery.NewDocumentFromReader(strings.NewReader(page))
	require.NoError(t, err)
	require.Equal(t, "frozen", cell("shop", "production").AttrOr("data-ready", ""))
	require.Contains(t, cell("shop", "production").Text(), "release week")
}
