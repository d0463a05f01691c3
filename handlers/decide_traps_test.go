package handlers_test

import (
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/testfactory"
)

// TestNotEnoughReviewersByPromotionAndForm: the not_enough_reviewers rule
// lives in the one submit path (saga.ProtectDeploy), so a promotion and
// the page's form are refused the same way as the API (contract §9), and
// the form says why in words. rival has nobody but bob: production's two
// reviewers can never be found for his deploys.
func TestNotEnoughReviewersByPromotionAndForm(t *testing.T) {
	t.Parallel()
	rb := setupRules(t)

	// A promotion: staging went fine, production can never be approved.
	r := rb.api(t, http.MethodPost, "/api/v1/tasks", rb.bobToken,
		`{"kind":"deploy","pipeline":"svc","params":{"app":"shop","version":"2.0.0","env":"staging"}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	testfactory.Completed(t, rb.store, r.body["id"].(string))
	r = rb.api(t, http.MethodPost, "/api/v1/environments/promote", rb.bobToken,
		`{"pipeline":"svc","target":{"app":"shop"},"from":"staging"}`, nil)
	require.Equal(t, http.StatusConflict, r.status, r.raw)
	code, _ := errCode(r)
	require.Equal(t, "not_enough_reviewers", code)
	require.Contains(t, r.raw, "needs 2 approvals")

	// The form: re-rendered with the refusal's words, nothing created.
	bob := rb.browser(t)
	rb.login(t, bob, "bob@rival.test", testPassword)
	form := url.Values{"_csrf": {rb.csrfFrom(t, bob, "/tasks/new")}, "pipeline": {"svc"},
		"app": {"shop"}, "version": {"2.0.1"}, "env": {"production"}}
	res := rb.postFormRes(t, bob, "/tasks", form, nil)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, res.StatusCode, string(body))
	require.Contains(t, string(body), "needs 2 approvals")
	require.Contains(t, string(body), "nobody else in the team may approve it")
	require.NotContains(t, string(body), "not_enough_reviewers", "words, not the code")
}

// TestFreezeFormOfAnUnknownEnvironment: the /environments page's freeze
// form refuses a name no deploy can go to, naming the known ones, and
// offers them to pick from (contract §9).
func TestFreezeFormOfAnUnknownEnvironment(t *testing.T) {
	t.Parallel()
	rb := setupRules(t)
	bob := rb.browser(t) // rival's admin
	rb.login(t, bob, "bob@rival.test", testPassword)
	res, page := rb.get(t, bob, "/environments", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	for _, env := range []string{"staging", "production", "gated"} {
		require.Contains(t, page, `value="`+env+`"`, "the form offers "+env)
	}
	form := url.Values{"_csrf": {rb.csrfFrom(t, bob, "/environments")}, "environment": {"prodution"},
		"minutes": {"60"}, "reason": {"typo"}}
	res = rb.postFormRes(t, bob, "/freezes", form, nil)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode, string(body))
	require.Contains(t, string(body), "prodution")
	require.Contains(t, string(body), "gated, production, qa, staging")

	form.Set("environment", "production")
	require.Equal(t, http.StatusSeeOther, rb.postForm(t, bob, "/freezes", form, nil))
}
