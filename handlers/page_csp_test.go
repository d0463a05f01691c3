package handlers_test

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
)

// TestNoPageCarriesAnInlineEventHandler: the CSP (script-src 'self')
// blocks inline handlers, so an onchange= or onclick= silently does
// nothing. Every GET page of the route table is rendered, signed in as a
// deployer and as an admin and signed out, and no element may carry an
// on* attribute. A new page route with a parameter this test cannot fill
// fails it, so the walk stays complete.
func TestNoPageCarriesAnInlineEventHandler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.api(t, "POST", "/api/v1/webhooks", b.bobToken, `{"url":"https://93.184.216.34/hook","events":["task.completed"]}`, nil)
	require.Equal(t, http.StatusCreated, created.status, created.raw)
	var taskIDs []string
	for _, body := range []string{`{"kind":"deploy","pipeline":"noop"}`, `{"kind":"deploy","pipeline":"approval-demo"}`,
		`{"kind":"deploy","pipeline":"web-service","params":{"app":"shop","version":"1.2.3"}}`} {
		r := b.api(t, "POST", "/api/v1/tasks", b.bobToken, body, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		taskIDs = append(taskIDs, r.body["id"].(string))
	}
	fill := map[string][]string{
		"/tasks/:id":         append(taskIDs, "00000000-0000-4000-8000-000000000000", "not-a-uuid"),
		"/webhooks/:id":      {created.body["id"].(string)},
		"/login/link/:token": {"no-such-link"},
	}
	var paths []string
	for _, r := range b.echo.Routes() {
		p := r.Path
		if r.Method != http.MethodGet || strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/static") || strings.HasSuffix(p, "/ws") ||
			p == "/healthz" || p == "/readyz" || p == "/metrics" || p == "/local/ca.crl" {
			continue
		}
		if !strings.Contains(p, ":") {
			paths = append(paths, p)
			continue
		}
		require.Contains(t, fill, p, "a page route this test does not know how to fill: add its parameters")
		for _, v := range fill[p] {
			paths = append(paths, p[:strings.Index(p, ":")]+v)
		}
	}
	paths = append(paths, "/no-such-page", "/tasks?state=failed", "/tasks/new?pipeline=no-such-pipeline")
	for _, name := range []string{"web-service", "approval-demo", "noop", "canary", "health-check", "static-site"} {
		paths = append(paths, "/tasks/new?pipeline="+name)
	}

	alice, bob := b.browser(t), b.browser(t)
	b.login(t, alice, "alice@acme.test", testPassword)
	b.login(t, bob, "bob@rival.test", testPassword)
	for _, who := range []struct {
		name string
		c    *http.Client
	}{{"signed out", b.browser(t)}, {"deployer", alice}, {"admin", bob}} {
		for _, path := range paths {
			for _, header := range []map[string]string{nil, {"HX-Request": "true"}} {
				res, body := b.get(t, who.c, path, header)
				require.Less(t, res.StatusCode, 500, "%s %s", who.name, path)
				require.Empty(t, inlineHandlers(t, body), "%s GET %s (HX-Request %v)", who.name, path, header != nil)
			}
		}
	}
}

// TestNoTemplateWritesAnInlineEventHandler reads every template, so a
// branch the page walk does not reach is covered too.
func TestNoTemplateWritesAnInlineEventHandler(t *testing.T) {
	t.Parallel()
	onAttr := regexp.MustCompile(`<[a-zA-Z][^>]*\son[a-z]+\s*=`)
	checked := 0
	err := filepath.WalkDir("../views", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".templ") {
			return err
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		checked++
		require.Empty(t, onAttr.FindAllString(string(b), -1), path)
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, checked, 10)
}

// inlineHandlers lists the elements of body that carry an on* attribute.
func inlineHandlers(t *testing.T, body string) []string {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	var found []string
	doc.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, n := range s.Nodes {
			for _, a := range n.Attr {
				if strings.HasPrefix(strings.ToLower(a.Key), "on") {
					found = append(found, "<"+n.Data+" "+a.Key+"="+a.Val+">")
				}
			}
		}
	})
	return found
}
