package mail

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/store"
	views "flightdeck/views/mail"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

func catalog(t *testing.T) *pipeline.Catalog {
	c, err := pipeline.NewCatalog(pipeline.Builtin()...)
	require.NoError(t, err)
	return c
}

func TestDescribe(t *testing.T) {
	tk := &task.Task{ID: "t1", Kind: task.KindDeploy, Pipeline: "web-service", Environment: "production",
		Params: json.RawMessage(`{"app":"shop","version":"1.2.3","env":"production","replicas":2}`)}
	a := Describe(tk, catalog(t))
	require.Equal(t, "web-service shop 1.2.3 → production", a.What)
	require.Equal(t, "1.2.3", a.Version)
	require.Equal(t, "app=shop", a.Target, "the environment is said once, after the arrow")
}

// TestChanges: a huge diff is cut with a marker, secrets are redacted
// (by the pipeline's secret params and by name), values are one line.
func TestChanges(t *testing.T) {
	c := task.Changes{From: map[string]any{}, To: map[string]any{}}
	for i := range 100 {
		f := fmt.Sprintf("f%03d", i)
		c.From[f], c.To[f] = i, i+1
		c.Fields = append(c.Fields, f)
	}
	c.From["db_password"], c.To["db_password"] = "hunter2", "hunter3"
	c.From["note"], c.To["note"] = "a", "b\r\nBcc: x"
	c.Fields = append([]string{"db_password", "note"}, c.Fields...)
	out, cut := changes(&c, nil)
	require.Len(t, out, maxChanges)
	require.Equal(t, 102-maxChanges, cut)
	require.Equal(t, views.Change{Field: "db_password", From: redacted, To: redacted}, out[0])
	require.Equal(t, "b Bcc: x", out[1].To)
	text := views.Letter{Headline: "h", Changes: out, ChangesCut: cut, Link: "http://127.0.0.1/approvals", LinkText: "Review"}.Text()
	require.Contains(t, text, "[… 62 more changes not shown: see the page]")
	require.NotContains(t, text, "hunter")
}

func TestOneLineAndWhen(t *testing.T) {
	require.Equal(t, "a b c d", OneLine("a\r\nb\tc\u2028 d\x00"))
	now := time.Date(2026, 11, 28, 21, 0, 0, 0, time.UTC)
	require.Equal(t, "in 59 minutes (21:59 UTC today)", When(now.Add(59*time.Minute), now))
	require.Equal(t, "3 hours ago (18:00 UTC today)", When(now.Add(-3*time.Hour), now))
	require.Equal(t, "in 2 days (Mon 30 Nov 21:00 UTC)", When(now.Add(48*time.Hour), now))
}

// TestExampleEmail renders an approval email as the server would (its
// text part is what the README and the report quote); go test -v shows it.
func TestExampleEmail(t *testing.T) {
	tk := &task.Task{ID: "0b9e4c1a-5d2f-4f7e-9a61-3c2d8e7f1a20", Kind: task.KindDeploy, Pipeline: "web-service", Team: "acme",
		Environment: "production", CreatedBy: "alice@acme.test",
		Params: json.RawMessage(`{"app":"shop","version":"1.2.3","env":"production","replicas":3}`)}
	now := time.Date(2026, 11, 28, 21, 0, 0, 0, time.UTC)
	ap := &store.Approval{Kind: "environment", Roles: []string{"approver", "admin"}, Required: 2, ExpiresAt: now.Add(4 * time.Hour),
		Changes: &task.Changes{From: map[string]any{"app": "shop", "version": "1.2.2", "replicas": 2, "env": "production"},
			To: map[string]any{"app": "shop", "version": "1.2.3", "replicas": 3, "env": "production"}, Fields: []string{"replicas", "version"}}}
	a := describe(tk, catalog(t))
	subject, headline := approvalAsk(a, ap)
	l := views.Letter{Headline: headline, LinkText: "Review and decide", Link: "http://127.0.0.1:8080/approvals",
		Facts: append([]views.Fact{{Name: "Asked by", Value: "alice@acme.test"}}, a.facts()...)}
	l.Facts = append(l.Facts, views.Fact{Name: "Approvals needed", Value: "2"},
		views.Fact{Name: "Who may decide", Value: "any approver or admin of team acme, except alice@acme.test"},
		views.Fact{Name: "Expires", Value: When(ap.ExpiresAt, now)})
	l.Changes, l.ChangesCut = changes(ap.Changes, a.pipeline)
	l.Why = why("http://127.0.0.1:8080", "you may decide approvals in team acme")
	e, err := Compose(t.Context(), subject, l)
	require.NoError(t, err)
	require.Equal(t, "[flightdeck] web-service shop 1.2.3 → production needs your approval", e.Subject)
	require.Contains(t, e.Text, "  version: 1.2.2 → 1.2.3\n")
	require.Contains(t, e.HTML, `href="http://127.0.0.1:8080/approvals"`)
	require.False(t, strings.Contains(e.Text, "env: production →"), "unchanged fields are not listed")
	t.Log("Subject: " + e.Subject + "\n\n" + e.Text)
	if p := os.Getenv("MAIL_EXAMPLE_HTML"); p != "" {
		require.NoError(t, os.WriteFile(p, []byte(e.HTML), 0o600))
	}
}
