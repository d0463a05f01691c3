package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/workflow/pipeline"
)

// formSamples fill the required fields that have no default, as a person
// would; every other field is submitted as the form shows it.
var formSamples = map[string]string{"app": "shop", "site": "docs", "version": "1.2.3", "port": "8080", "regions": "eu-west-1\nus-east-1"}

// TestEveryPipelineFormSubmitsItsDefaults walks every built-in and e2e
// pipeline's submit form: what the form shows, sent back unchanged (only
// the required fields without a default filled in), creates the task, and
// the task's parameters are the pipeline's defaults.
func TestEveryPipelineFormSubmitsItsDefaults(t *testing.T) {
	t.Parallel()
	loaded, err := pipeline.LoadDir("../e2e/pipelines")
	require.NoError(t, err)
	catalog, err := pipeline.NewCatalog(append(pipeline.Builtin(), loaded...)...)
	require.NoError(t, err)
	b := setupCatalog(t, nil, catalog)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)

	for _, p := range catalog.All() {
		t.Run(p.Name, func(t *testing.T) {
			res, body := b.get(t, c, "/tasks/new?pipeline="+url.QueryEscape(p.Name), nil)
			require.Equal(t, http.StatusOK, res.StatusCode)
			doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
			require.NoError(t, err)
			form := doc.Find(`form[data-testid="task-form"]`)
			require.Equal(t, 1, form.Length())
			values := url.Values{}
			form.Find("input[name], select[name], textarea[name]").Each(func(_ int, s *goquery.Selection) {
				name := s.AttrOr("name", "")
				v := ""
				switch goquery.NodeName(s) {
				case "textarea":
					v = s.Text()
				case "select":
					opt := s.Find("option[selected]")
					if opt.Length() == 0 {
						opt = s.Find("option").First()
					}
					v = opt.AttrOr("value", "")
				default:
					if s.AttrOr("type", "") == "checkbox" {
						if _, on := s.Attr("checked"); !on {
							return
						}
					}
					v = s.AttrOr("value", "")
				}
				if _, required := s.Attr("required"); required && v == "" {
					sample, ok := formSamples[name]
					require.True(t, ok, "required field %s has no default and no sample in formSamples", name)
					v = sample
				}
				values.Set(name, v)
			})
			res, err = c.PostForm(b.srv.URL+"/tasks", values)
			require.NoError(t, err)
			res.Body.Close()
			require.Equal(t, http.StatusSeeOther, res.StatusCode, "the form as shown: %v", values)
			id := strings.TrimPrefix(res.Header.Get("Location"), "/tasks/")

			got := b.api(t, "GET", "/api/v1/tasks/"+id, b.aliceToken, "", nil)
			require.Equal(t, http.StatusOK, got.status, got.raw)
			params, _ := got.body["params"].(map[string]any)
			for _, prm := range p.Params {
				if prm.Default == nil || prm.Secret {
					continue
				}
				want, err := json.Marshal(prm.Default)
				require.NoError(t, err)
				have, err := json.Marshal(params[prm.Name])
				require.NoError(t, err)
				require.JSONEq(t, string(want), string(have), "parameter %s", prm.Name)
			}
		})
	}
}

// TestListParamsOnePerLineOrCommaSeparated: a list field reads lines and
// commas alike, blanks dropped; its default shows one item per line.
func TestListParamsOnePerLineOrCommaSeparated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	_, body := b.get(t, c, "/tasks/new?pipeline=canary", nil)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, "textarea", goquery.NodeName(doc.Find(`[data-testid="field-regions"]`)))
	require.Contains(t, doc.Find(`[data-testid="hint-regions"]`).Text(), "per line or comma-separated")
	csrf := doc.Find(`input[name="_csrf"]`).AttrOr("value", "")

	for _, tc := range []struct{ name, regions string }{
		{"Lines", "eu-west-1\r\nus-east-1\r\n"},
		{"Commas", "eu-west-1, us-east-1"},
		{"BothWithBlanks", "\neu-west-1,\n\n us-east-1 ,"},
	} {
		res, err := c.PostForm(b.srv.URL+"/tasks", url.Values{"_csrf": {csrf}, "pipeline": {"canary"}, "version": {"1.2.3"},
			"regions": {tc.regions}, "priority": {"normal"}})
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusSeeOther, res.StatusCode, tc.name)
		got := b.api(t, "GET", "/api/v1/tasks/"+strings.TrimPrefix(res.Header.Get("Location"), "/tasks/"), b.aliceToken, "", nil)
		require.Equal(t, []any{"eu-west-1", "us-east-1"}, got.body["params"].(map[string]any)["regions"], tc.name)
	}
}

// TestUnknownPipelineAndTaskArePages: a mistyped pipeline or task id is a
// page that says what was not found, with a way back.
func TestUnknownPipelineAndTaskArePages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	for _, tc := range []struct{ path, title, back string }{
		{"/tasks/new?pipeline=web-servic", "No such pipeline", "/pipelines"},
		{"/tasks/00000000-0000-4000-8000-000000000000", "No such task", "/tasks"},
		{"/no-such-page", "Page not found", "/tasks"},
	} {
		res, body := b.get(t, c, tc.path, nil)
		require.Equal(t, http.StatusNotFound, res.StatusCode, tc.path)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		require.Equal(t, tc.title, doc.Find(`[data-testid="error-page"] h1`).Text(), tc.path)
		require.Equal(t, tc.back, doc.Find(`[data-testid="error-page"] a.btn`).AttrOr("href", ""), tc.path)
		require.NotEqual(t, "not found", doc.Find(`[data-testid="error-page"] p.muted`).First().Text())
	}
	r := b.api(t, "GET", "/api/v1/tasks/00000000-0000-4000-8000-000000000000", b.aliceToken, "", nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, "not_found", r.body["error"].(map[string]any)["code"])
}

// TestPipelinesPageLinksEachForm: every pipeline on /pipelines links to its
// submit form.
func TestPipelinesPageLinksEachForm(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	_, body := b.get(t, c, "/pipelines", nil)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	sections := doc.Find(`[data-testid="pipeline"]`)
	require.Equal(t, len(pipeline.Builtin()), sections.Length())
	sections.Each(func(_ int, s *goquery.Selection) {
		name := strings.TrimPrefix(s.AttrOr("id", ""), "pipeline-")
		require.Equal(t, "/tasks/new?pipeline="+url.QueryEscape(name), s.Find(`[data-testid="pipeline-submit"]`).AttrOr("href", ""))
	})
}
