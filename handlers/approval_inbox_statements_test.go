package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/handlers"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
)

// One load of /approvals sends as many statements with two items as with
// eight on several targets: what each deploy replaces is read for all of
// them at once, not once per item.
func TestApprovalInboxStatementsDoNotGrowWithItems(t *testing.T) {
	t.Parallel()
	var rec *dbtest.Statements
	b := setupDeps(t, nil, nil, func(d *handlers.Deps, _ string) {
		traced, r := dbtest.Traced(t, d.Store.Pool())
		d.Store, rec = d.Store.WithPool(traced), r
	})
	addApprover(t, b, "ann@acme.test")
	submit := func(app, env, version string) string {
		r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken,
			`{"kind":"deploy","pipeline":"web-service","params":{"app":"`+app+`","version":"`+version+`","env":"`+env+`"}}`, nil)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		return r.body["id"].(string)
	}
	// add parks a deploy of each app for approval; every other target
	// has a completed deploy before it, the rest are first deploys.
	change := map[string]string{} // by task: what the page says it changes
	add := func(apps ...string) {
		for _, app := range apps {
			n := len(change)
			env := []string{"staging", "production"}[n%2]
			want := "version 2.0 (first deploy of this target)"
			if n%2 == 0 {
				testfactory.Completed(t, b.store, submit(app, env, "1.0"))
				want = "version 1.0 → 2.0"
			}
			id := submit(app, env, "2.0")
			testfactory.AwaitingApproval(t, b.store, id, []string{"approver", "admin"})
			change[id] = want
		}
	}
	ann, alice := b.browser(t), b.browser(t)
	b.login(t, ann, "ann@acme.test", testPassword)
	b.login(t, alice, "alice@acme.test", testPassword)
	// load counts the statements of one page load, and checks what it shows.
	load := func(c *http.Client, list string, items int) []dbtest.Statement {
		rec.Take()
		res, body := b.get(t, c, "/approvals", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		sel := doc.Find(`[data-testid="` + list + `"]`)
		require.Equal(t, items, sel.Length())
		sel.Each(func(_ int, s *goquery.Selection) {
			require.Equal(t, change[s.AttrOr("data-task", "")], strings.Join(strings.Fields(s.Find(`[data-testid="inbox-change"]`).Text()), " "))
		})
		return rec.Take()
	}

	add("shop", "cart")
	few := load(ann, "inbox-item", 2)
	fewWaiting := load(alice, "waiting-item", 2)
	add("blog", "mail", "auth", "feed", "pay", "ship")
	require.NotEmpty(t, few, "the traced pool serves the page")
	many := load(ann, "inbox-item", 8)
	manyWaiting := load(alice, "waiting-item", 8)
	require.Equal(t, len(few), len(many), "statements of the approver's page with 2 and 8 items: %q", sqlOf(many))
	require.Equal(t, len(fewWaiting), len(manyWaiting), "statements of the requester's page with 2 and 8 waiting: %q", sqlOf(manyWaiting))
}

// sqlOf lists the start of each statement, past its comments, for a
// failure's message.
func sqlOf(st []dbtest.Statement) []string {
	out := make([]string, len(st))
	for i, s := range st {
		var code []string
		for _, line := range strings.Split(s.SQL, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "--") {
				code = append(code, line)
			}
		}
		out[i] = strings.Join(strings.Fields(strings.Join(code, " ")), " ")
		out[i] = out[i][:min(len(out[i]), 60)]
	}
	return out
}
