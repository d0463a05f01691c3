package handlers_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/testfactory"
	"flightdeck/workflow/pipeline"
)

const rulesPipeline = `name: svc
params:
  - {name: app, type: string, pattern: "^[a-z]+$", required: true}
  - {name: version, type: string, required: true}
  - {name: env, type: enum, values: [staging, production, gated], default: staging}
steps:
  - {name: one, action: noop}
`

const rulesFile = `environments:
  staging:
    promote_to: production
  production:
    reviewers: {count: 2, roles: [approver, admin]}
    versions: '^[0-9]+\.[0-9]+\.[0-9]+$'
  gated:
    requires: {env: staging, soak: 1h}
`

// rulesBundle is a server whose svc pipeline deploys into protected
// environments, with more people of acme: ann (admin), pat and quinn
// (approvers), vic (viewer); bob is rival's admin.
type rulesBundle struct {
	*testBundle
	tokens map[string]string
}

func setupRules(t *testing.T) *rulesBundle {
	t.Helper()
	pl, err := pipeline.Parse("svc.yaml", []byte(rulesPipeline))
	require.NoError(t, err)
	catalog, err := pipeline.NewCatalog(append(pipeline.Builtin(), pl)...)
	require.NoError(t, err)
	rules, err := pipeline.ParseEnvironments("environments.yaml", []byte(rulesFile))
	require.NoError(t, err)
	catalog.SetEnvironments(rules)
	rb := &rulesBundle{testBundle: setupCatalog(t, nil, catalog), tokens: map[string]string{}}
	rb.tokens["alice"], rb.tokens["bob"] = rb.aliceToken, rb.bobToken
	for _, p := range []struct {
		name string
		role auth.Role
	}{{"ann", auth.RoleAdmin}, {"pat", auth.RoleApprover}, {"quinn", auth.RoleApprover}, {"vic", auth.RoleViewer}} {
		testfactory.User(t, rb.store, p.name+"@acme.test", "acme", p.role)
		secret, h := auth.NewSecret(auth.TokenPrefix)
		require.NoError(t, rb.store.TokenCreate(t.Context(), p.name+"@acme.test", "test", h))
		rb.tokens[p.name] = secret
	}
	return rb
}

func (rb *rulesBundle) submit(t *testing.T, who, env, version, extra string) apiResp {
	t.Helper()
	return rb.api(t, http.MethodPost, "/api/v1/tasks", rb.tokens[who],
		`{"kind":"deploy","pipeline":"svc","params":{"app":"shop","version":"`+version+`","env":"`+env+`"}`+extra+`}`, nil)
}

func TestEnvironmentRulesOverTheAPI(t *testing.T) {
	t.Parallel()
	rb := setupRules(t)

	r := rb.submit(t, "alice", "production", "latest", "")
	require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
	code, field := errCode(r)
	require.Equal(t, "invalid", code)
	require.Equal(t, "params.version", field)

	r = rb.submit(t, "alice", "gated", "1.0.0", "")
	require.Equal(t, http.StatusConflict, r.status, r.raw)
	code, _ = errCode(r)
	require.Equal(t, "not_promoted", code)
	require.Contains(t, r.raw, "never")

	r = rb.submit(t, "alice", "staging", "1.0.0", `,"run_at":"2001-01-01T00:00:00Z"`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
	_, field = errCode(r)
	require.Equal(t, "run_at", field)
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	r = rb.submit(t, "alice", "staging", "1.0.0", `,"run_at":"`+at.Format(time.RFC3339)+`"`)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	require.Equal(t, "scheduled", r.body["state"])
	require.Equal(t, at.Format(time.RFC3339), r.body["run_at"])

	// Freezes: admins of the team only.
	until := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	freeze := `{"environment":"production","until":"` + until + `","reason":"incident 4711"}`
	r = rb.api(t, http.MethodPost, "/api/v1/freezes", rb.tokens["alice"], freeze, nil)
	require.Equal(t, http.StatusForbidden, r.status, r.raw)
	r = rb.api(t, http.MethodPost, "/api/v1/freezes", rb.tokens["ann"], `{"environment":"production","until":"2001-01-01T00:00:00Z","reason":"x"}`, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
	r = rb.api(t, http.MethodPost, "/api/v1/freezes", rb.tokens["ann"], freeze, nil)
	require.Equal(t, http.StatusCreated, r.status, r.raw)
	require.Equal(t, "api", r.body["source"])
	freezeID := r.body["id"].(string)

	r = rb.submit(t, "alice", "production", "1.0.0", "")
	require.Equal(t, http.StatusConflict, r.status, r.raw)
	code, _ = errCode(r)
	require.Equal(t, "frozen", code)
	require.Contains(t, r.raw, "incident 4711")
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err)
	require.InDelta(t, 7200, secs, 120)

	// Another team's deploys into production are not frozen by acme's
	// freeze; but rival has nobody but bob, so its reviewers can never be
	// found (contract §9).
	r = rb.api(t, http.MethodPost, "/api/v1/tasks", rb.bobToken,
		`{"kind":"deploy","pipeline":"svc","params":{"app":"shop","version":"1.0.0","env":"production"}}`, nil)
	require.Equal(t, http.StatusConflict, r.status, r.raw)
	code, _ = errCode(r)
	require.Equal(t, "not_enough_reviewers", code)
	require.Contains(t, r.raw, "needs 2 approvals")
	require.Contains(t, r.raw, "nobody else in the team may approve it")

	// Break-glass: admins, with a reason.
	override := `,"override":{"reason":"hotfix for incident 4711"}`
	r = rb.submit(t, "alice", "production", "1.0.1", override)
	require.Equal(t, http.StatusForbidden, r.status, r.raw)
	r = rb.submit(t, "ann", "production", "1.0.1", `,"override":{"reason":"short"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
	r = rb.submit(t, "ann", "production", "1.0.1", override)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	require.Equal(t, "awaiting_approval", r.body["state"], "reviewers still apply")
	o := r.body["override"].(map[string]any)
	require.Equal(t, "ann@acme.test", o["by"])
	require.Equal(t, "hotfix for incident 4711", o["reason"])
	overridden := r.body["id"].(string)
	r = rb.api(t, http.MethodGet, "/api/v1/tasks/"+overridden, rb.tokens["alice"], "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	held := r.body["held"].(map[string]any)
	require.Equal(t, "frozen", held["reason"])

	r = rb.api(t, http.MethodGet, "/api/v1/freezes", rb.tokens["vic"], "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.Contains(t, r.raw, freezeID)
	r = rb.api(t, http.MethodGet, "/api/v1/freezes", rb.bobToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.NotContains(t, r.raw, freezeID, "another team's freeze")

	r = rb.api(t, http.MethodDelete, "/api/v1/freezes/"+freezeID, rb.bobToken, "", nil)
	require.Equal(t, http.StatusNotFound, r.status, r.raw)
	r = rb.api(t, http.MethodDelete, "/api/v1/freezes/"+freezeID, rb.tokens["alice"], "", nil)
	require.Equal(t, http.StatusForbidden, r.status, r.raw)
	r = rb.api(t, http.MethodDelete, "/api/v1/freezes/"+freezeID, rb.tokens["ann"], "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	r = rb.submit(t, "alice", "production", "1.0.2", "")
	require.Equal(t, http.StatusAccepted, r.status, r.raw)

	// The audit log: admins of the team, newest first.
	r = rb.api(t, http.MethodGet, "/api/v1/audit", rb.tokens["alice"], "", nil)
	require.Equal(t, http.StatusForbidden, r.status, r.raw)
	r = rb.api(t, http.MethodGet, "/api/v1/audit?limit=0", rb.tokens["ann"], "", nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
	r = rb.api(t, http.MethodGet, "/api/v1/audit", rb.tokens["ann"], "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var types []string
	for _, e := range r.body["entries"].([]any) {
		types = append(types, e.(map[string]any)["type"].(string))
	}
	require.Equal(t, []string{"freeze.ended", "task.override", "freeze.created", "token.created", "token.created", "token.created",
		"token.created", "token.created"}, types)
	r = rb.api(t, http.MethodGet, "/api/v1/audit?type=task.override&limit=1", rb.tokens["ann"], "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	entry := r.body["entries"].([]any)[0].(map[string]any)
	require.Equal(t, overridden, entry["task_id"])
	require.Nil(t, r.body["next"])
	r = rb.api(t, http.MethodGet, "/api/v1/audit", rb.bobToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.NotContains(t, r.raw, "incident 4711", "another team's audit log")
}

func TestPromoteAndTwoReviewersOverTheAPI(t *testing.T) {
	t.Parallel()
	rb := setupRules(t)

	promote := `{"pipeline":"svc","target":{"app":"shop"},"from":"staging"}`
	r := rb.api(t, http.MethodPost, "/api/v1/environments/promote", rb.tokens["alice"], promote, nil)
	require.Equal(t, http.StatusConflict, r.status, r.raw)
	code, _ := errCode(r)
	require.Equal(t, "conflict", code, "nothing deployed to staging yet")

	r = rb.submit(t, "alice", "staging", "2.0.0", "")
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	staged := r.body["id"].(string)
	testfactory.Completed(t, rb.store, staged)

	for who, want := range map[string]int{"vic": http.StatusForbidden, "bob": http.StatusConflict} {
		r = rb.api(t, http.MethodPost, "/api/v1/environments/promote", rb.tokens[who], promote, nil)
		require.Equal(t, want, r.status, who+": "+r.raw)
	}
	r = rb.api(t, http.MethodPost, "/api/v1/environments/promote", rb.tokens["alice"], `{"pipeline":"svc","target":{},"from":"staging"}`, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
	_, field := errCode(r)
	require.Equal(t, "target.app", field)

	r = rb.api(t, http.MethodPost, "/api/v1/environments/promote", rb.tokens["alice"], promote, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	require.Equal(t, staged, r.body["promoted_from"])
	require.Equal(t, "production", r.body["params"].(map[string]any)["env"])
	require.Equal(t, "awaiting_approval", r.body["state"])
	id := r.body["id"].(string)

	r = rb.api(t, http.MethodGet, "/api/v1/tasks/"+id, rb.tokens["alice"], "", nil)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	a := r.body["approvals"].([]any)[0].(map[string]any)
	require.Equal(t, "environment", a["kind"])
	require.EqualValues(t, 2, a["required"])
	changes := a["changes"].(map[string]any)
	require.Nil(t, changes["from"])
	require.Contains(t, changes["fields"], "env")
	aid := a["id"].(string)

	decide := func(who, verb string) apiResp {
		return rb.api(t, http.MethodPost, "/api/v1/tasks/"+id+"/approvals/"+aid+"/"+verb, rb.tokens[who], `{"comment":"ok"}`, nil)
	}
	require.Equal(t, http.StatusForbidden, decide("alice", "approve").status, "never the creator")
	require.Equal(t, http.StatusForbidden, decide("vic", "approve").status)
	require.Equal(t, http.StatusNotFound, decide("bob", "approve").status, "another team's approval")
	require.Equal(t, http.StatusOK, decide("pat", "approve").status)
	require.Equal(t, http.StatusConflict, decide("pat", "approve").status, "the same person twice")
	r = rb.api(t, http.MethodGet, "/api/v1/tasks/"+id, rb.tokens["alice"], "", nil)
	require.Equal(t, "awaiting_approval", r.body["state"], "one of two")
	require.Equal(t, http.StatusOK, decide("ann", "approve").status)
	r = rb.api(t, http.MethodGet, "/api/v1/tasks/"+id, rb.tokens["alice"], "", nil)
	require.Equal(t, "pending", r.body["state"], r.raw)
	decisions := r.body["approvals"].([]any)[0].(map[string]any)["decisions"].([]any)
	require.Len(t, decisions, 2)
	require.Equal(t, "pat@acme.test", decisions[0].(map[string]any)["by"])
}

// TestNotEnoughReviewersAtSubmit: a submit whose reviewers can never be
// found is refused at once, saying how many are needed and how many may;
// the creator never counts (four eyes), and once the team has enough
// people the same submit is accepted.
func TestNotEnoughReviewersAtSubmit(t *testing.T) {
	t.Parallel()
	rb := setupRules(t)
	submit := func(who string) apiResp {
		return rb.api(t, http.MethodPost, "/api/v1/tasks", rb.tokens[who],
			`{"kind":"deploy","pipeline":"svc","params":{"app":"shop","version":"1.0.0","env":"production"}}`, nil)
	}
	for _, p := range []struct {
		name string
		role auth.Role
	}{{"sam", auth.RoleApprover}, {"una", auth.RoleAdmin}, {"dee", auth.RoleDeployer}} {
		testfactory.User(t, rb.store, p.name+"@solo.test", "solo", p.role)
		secret, h := auth.NewSecret(auth.TokenPrefix)
		require.NoError(t, rb.store.TokenCreate(t.Context(), p.name+"@solo.test", "test", h))
		rb.tokens[p.name] = secret
	}
	// sam is an approver: of approver/admin, only una is left
	r := submit("sam")
	require.Equal(t, http.StatusConflict, r.status, r.raw)
	code, _ := errCode(r)
	require.Equal(t, "not_enough_reviewers", code)
	require.Contains(t, r.raw, "needs 2 approvals")
	require.Contains(t, r.raw, "only 1 other person in the team may approve it")
	// dee is a deployer: sam and una may, which is enough
	r = submit("dee")
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	require.Equal(t, "awaiting_approval", r.body["state"])
	// a re-run by sam is sam's deploy: the same submit path refuses it
	deeTask := r.body["id"].(string)
	aid := r.body["approvals"].([]any)[0].(map[string]any)["id"].(string)
	for _, who := range []string{"sam", "una"} {
		d := rb.api(t, http.MethodPost, "/api/v1/tasks/"+deeTask+"/approvals/"+aid+"/approve", rb.tokens[who], `{}`, nil)
		require.Equal(t, http.StatusOK, d.status, d.raw)
	}
	testfactory.Completed(t, rb.store, deeTask)
	rr := rb.api(t, http.MethodPost, "/api/v1/tasks/"+deeTask+"/rerun", rb.tokens["sam"], ``, nil)
	require.Equal(t, http.StatusConflict, rr.status, rr.raw)
	code, _ = errCode(rr)
	require.Equal(t, "not_enough_reviewers", code, "a re-run goes through ProtectDeploy")
	// a second approver joins: sam's deploy can find its reviewers now
	testfactory.User(t, rb.store, "ray@solo.test", "solo", auth.RoleApprover)
	r = submit("sam")
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
}

// TestFreezeOfAnUnknownEnvironment: a freeze of a name no deploy can go to
// would protect nothing: 422 on environment, naming the ones there are
// (contract §9); the page's form says the same.
func TestFreezeOfAnUnknownEnvironment(t *testing.T) {
	t.Parallel()
	rb := setupRules(t)
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r := rb.api(t, http.MethodPost, "/api/v1/freezes", rb.tokens["ann"],
		`{"environment":"prodution","until":"`+until+`","reason":"typo"}`, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
	code, field := errCode(r)
	require.Equal(t, "invalid", code)
	require.Equal(t, "environment", field)
	require.Contains(t, r.raw, "prodution")
	require.Contains(t, r.raw, "gated, production, qa, staging", "the known environments, by name")
	// a value of a pipeline's environment enum is known, rules or not
	r = rb.api(t, http.MethodPost, "/api/v1/freezes", rb.tokens["ann"],
		`{"environment":"gated","until":"`+until+`","reason":"quiet week"}`, nil)
	require.Equal(t, http.StatusCreated, r.status, r.raw)
}
