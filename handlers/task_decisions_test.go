package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/testfactory"
	"flightdeck/workflow/pipeline"
)

// TestRunPageListsEveryDecisionFromTheStart: the run page of a deploy
// waiting for production's reviewers lists every decision it will need
// (contract §9, issue 36): the reviewers with who may decide, the wait
// timer, the step approval the reviewers decide and the one they do not.
func TestRunPageListsEveryDecisionFromTheStart(t *testing.T) {
	t.Parallel()
	pl, err := pipeline.Parse("svc.yaml", []byte(`name: svc
params:
  - {name: app, type: string, required: true}
  - {name: version, type: string, required: true}
  - {name: env, type: enum, values: [staging, production], default: staging}
steps:
  - {name: one, action: noop}
  - {name: two, action: noop, approval: {roles: [approver]}}
  - {name: three, action: noop, approval: {roles: [deployer]}}
  - {name: four, action: noop, approval: {roles: [admin], when: '{{ eq .params.env "staging" }}'}}
`))
	require.NoError(t, err)
	catalog, err := pipeline.NewCatalog(append(pipeline.Builtin(), pl)...)
	require.NoError(t, err)
	rules, err := pipeline.ParseEnvironments("environments.yaml", []byte(`environments:
  production:
    reviewers: {count: 2, roles: [approver, admin]}
    wait: 10m
`))
	require.NoError(t, err)
	catalog.SetEnvironments(rules)
	b := setupCatalog(t, nil, catalog)
	testfactory.User(t, b.store, "pat@acme.test", "acme", auth.RoleApprover)
	testfactory.User(t, b.store, "ann@acme.test", "acme", auth.RoleAdmin)

	r := b.api(t, http.MethodPost, "/api/v1/tasks", b.aliceToken,
		`{"kind":"deploy","pipeline":"svc","params":{"app":"shop","version":"1.0.0","env":"production"}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	id := r.body["id"].(string)

	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	_, page := b.get(t, c, "/tasks/"+id, nil)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	require.NoError(t, err)
	var got []string
	doc.Find(`[data-testid="decision"]`).Each(func(_ int, s *goquery.Selection) {
		got = append(got, strings.Join(strings.Fields(s.Text()), " "))
	})
	require.Len(t, got, 4, "reviewers, wait, two, three (four's when does not hold): %q", got)
	require.Contains(t, got[0], "2 reviewers of production approve the deploy")
	require.Contains(t, got[0], "approver or admin, not alice@acme.test (four eyes)")
	require.Contains(t, got[0], "pending (0 of 2)")
	require.Contains(t, got[1], "a wait of 10 minutes after the reviewers")
	require.Contains(t, got[2], "the approval of step two")
	require.Contains(t, got[2], "decided by the reviewers' approval")
	require.Contains(t, got[3], "the approval of step three")
	require.Contains(t, got[3], "people with the role deployer")
	require.Contains(t, got[3], "ahead")
}
