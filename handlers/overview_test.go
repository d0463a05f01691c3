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
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// The enum lists the environments neither in promotion order nor by name,
// so the overview's order can only come from the promote_to chains.
const overviewPipeline = `name: ovsvc
params:
  - {name: app, type: string, pattern: "^[a-z]+$", required: true}
  - {name: version, type: string, required: true}
  - {name: env, type: enum, values: [production, sandbox, staging, dev], default: dev}
steps:
  - {name: one, action: noop}
`

const overviewRules = `environments:
  dev:
    promote_to: staging
  staging:
    promote_to: production
  production:
    requires: {env: staging, soak: 1h}
`

// setupOverview is a server with ovsvc and its rules, a worker pool that
// runs its deploys, alice (deployer) and ann (admin) of acme.
func setupOverview(t *testing.T) (*testBundle, string) {
	t.Helper()
	pl, err := pipeline.Parse("ovsvc.yaml", []byte(overviewPipeline))
	require.NoError(t, err)
	catalog, err := pipeline.NewCatalog(append(pipeline.Builtin(), pl)...)
	require.NoError(t, err)
	rules, err := pipeline.ParseEnvironments("environments.yaml", []byte(overviewRules))
	require.NoError(t, err)
	catalog.SetEnvironments(rules)
	b := setupCatalog(t, nil, catalog)
	testfactory.User(t, b.store, "ann@acme.test", "acme", auth.RoleAdmin)
	annToken, h := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, b.store.TokenCreate(t.Context(), "ann@acme.test", "test", h))

	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := saga.NewRunner(saga.Config{Catalog: catalog, Logger: logger, RetryBase: time.Millisecond, FlushInterval: 10 * time.Millisecond})
	n := notify.NewListener(b.store, nil)
	p := queue.New(b.store, map[task.Kind]queue.Handler{task.KindDeploy: runner}, queue.Config{
		Workers: 2, PollInterval: 20 * time.Millisecond, Grace: 10 * time.Millisecond, Logger: logger})
	p.Attach(n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(ctx) })
	wg.Go(func() { _ = p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return b, annToken
}

func ovDeploy(t *testing.T, b *testBundle, token, app, version, env, extra string) {
	t.Helper()
	r := b.api(t, http.MethodPost, "/api/v1/tasks", token,
		`{"kind":"deploy","pipeline":"ovsvc","params":{"app":"`+app+`","version":"`+version+`","env":"`+env+`"}`+extra+`}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	b.waitState(t, r.body["id"].(string), "completed")
}

// TestOverview: environments in promotion order (then the rest by name),
// and each cell's readiness by the submit's own rules: ready, soaking
// until the soak ends, not in the source environment, frozen until the
// freeze ends; a Promote button the rules would refuse is disabled with
// the reason.
func TestOverview(t *testing.T) {
	t.Parallel()
	b, annToken := setupOverview(t)
	ovDeploy(t, b, b.aliceToken, "shop", "1.0.0", "dev", "")
	ovDeploy(t, b, b.aliceToken, "shop", "0.9.0", "staging", "")
	ovDeploy(t, b, b.aliceToken, "shop", "1.0.0", "sandbox", "")
	// cart reaches production past the promotion gate (an admin's
	// override): it never was in staging.
	ovDeploy(t, b, annToken, "cart", "2.0.0", "production", `,"override":{"reason":"bootstrap for the overview test"}`)

	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	overview := func() *goquery.Document {
		t.Helper()
		res, body := b.get(t, c, "/overview", nil)
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		return doc
	}
	doc := overview()
	var heads []string
	doc.Find(`[data-testid="ov-pipeline-ovsvc"] [data-testid="ov-env-head"]`).Each(func(_ int, s *goquery.Selection) {
		heads = append(heads, strings.TrimSpace(s.Text()))
	})
	require.Equal(t, []string{"dev", "staging", "production", "sandbox"}, heads)
	require.Equal(t, "Overview", strings.TrimSpace(doc.Find(`[data-testid="nav-overview"]`).Text()))

	cell := func(doc *goquery.Document, app, env string) *goquery.Selection {
		t.Helper()
		s := doc.Find(`[data-testid="ov-row-app=` + app + `"] [data-testid="ov-cell-` + env + `"]`)
		require.Equal(t, 1, s.Length(), "%s in %s", app, env)
		return s
	}
	text := func(s *goquery.Selection, id string) string {
		return strings.Join(strings.Fields(s.Find(`[data-testid="`+id+`"]`).Text()), " ")
	}

	// shop: 1.0.0 in dev may go into staging now.
	st := cell(doc, "shop", "staging")
	require.Equal(t, "0.9.0 just now", text(st, "ov-version")+" "+strings.TrimSpace(st.Find(".ov-version .muted").Text()))
	require.Equal(t, "ready", st.Find(`[data-testid="ov-promote"]`).AttrOr("data-state", ""))
	btn := st.Find(`[data-testid="ov-promote-button"]`)
	require.Equal(t, "Promote 1.0.0 from dev", strings.Join(strings.Fields(btn.Text()), " "))
	_, disabled := btn.Attr("disabled")
	require.False(t, disabled)
	require.Equal(t, "shop", st.Find(`input[name="target.app"]`).AttrOr("value", ""))

	// shop: 0.9.0 completed in staging just now soaks for an hour.
	pr := cell(doc, "shop", "production")
	require.Equal(t, "soaking", pr.Find(`[data-testid="ov-promote"]`).AttrOr("data-state", ""))
	require.Contains(t, text(pr, "ov-readiness"), "soaking until ")
	require.Contains(t, text(pr, "ov-readiness"), "UTC")
	btn = pr.Find(`[data-testid="ov-promote-button"]`)
	_, disabled = btn.Attr("disabled")
	require.True(t, disabled)
	require.Contains(t, btn.AttrOr("title", ""), "to soak in staging for 1 hour")
	require.Contains(t, text(pr, "ov-why"), "to soak in staging for 1 hour")
	require.Equal(t, "nothing deployed", text(pr, "ov-version"))

	// cart: nothing in staging to promote into production; its
	// production cell shows 2.0.0.
	cp := cell(doc, "cart", "production")
	require.Equal(t, "not_in_source", cp.Find(`[data-testid="ov-promote"]`).AttrOr("data-state", ""))
	require.Equal(t, "2.0.0", text(cp, "ov-version")[:5])
	_, disabled = cp.Find(`[data-testid="ov-promote-button"]`).Attr("disabled")
	require.True(t, disabled)

	// sandbox is in no chain: nothing promotes into it.
	require.Equal(t, 0, cell(doc, "shop", "sandbox").Find(`[data-testid="ov-promote"]`).Length())

	// A freeze of staging: its cells say until when, and shop's Promote
	// into staging is refused as the submit would refuse it.
	until := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	r := b.api(t, http.MethodPost, "/api/v1/freezes", annToken,
		`{"environment":"staging","until":"`+until.Format(time.RFC3339)+`","reason":"release train"}`, nil)
	require.Equal(t, http.StatusCreated, r.status, r.raw)
	doc = overview()
	st = cell(doc, "shop", "staging")
	require.Equal(t, "frozen", st.Find(`[data-testid="ov-promote"]`).AttrOr("data-state", ""))
	require.Contains(t, text(st, "ov-frozen"), "frozen until "+until.Format("15:04:05"))
	require.Contains(t, text(st, "ov-readiness"), "frozen until ")
	btn = st.Find(`[data-testid="ov-promote-button"]`)
	_, disabled = btn.Attr("disabled")
	require.True(t, disabled)
	require.Contains(t, btn.AttrOr("title", ""), "release train")
	// The submit agrees: the same promotion over the API is refused.
	r = b.api(t, http.MethodPost, "/api/v1/environments/promote", b.aliceToken,
		`{"pipeline":"ovsvc","target":{"app":"shop"},"from":"dev","to":"staging"}`, nil)
	require.Equal(t, http.StatusConflict, r.status, r.raw)
}
