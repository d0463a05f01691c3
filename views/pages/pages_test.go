package pages

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
	"github.com/stretchr/testify/require"
)

func render(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, c.Render(context.Background(), &buf))
	doc, err := goquery.NewDocumentFromReader(&buf)
	require.NoError(t, err)
	return doc
}

func TestTaskListEscapesUserText(t *testing.T) {
	t.Parallel()
	doc := render(t, TaskList(TaskListProps{Tasks: []TaskRow{{
		ID: "0b7e0c1e-0000-4000-8000-000000000001", Kind: "deploy", Pipeline: `<script>alert(1)</script>`,
		State: "running", Priority: "normal", CreatedBy: `x" hx-get="/evil`, CreatedAt: time.Unix(0, 0),
	}}, Next: "abc"}))
	require.Equal(t, 0, doc.Find("script").Length())
	require.Equal(t, 0, doc.Find("[hx-get]").Length())
	require.Contains(t, doc.Find(`[data-testid="task-row"]`).Text(), "<script>alert(1)</script>")
	require.Equal(t, "running", doc.Find(`[data-testid="state-badge"]`).AttrOr("data-state", ""))
	require.Equal(t, "/tasks?before=abc", doc.Find(`[data-testid="next-page"]`).AttrOr("href", ""))
}

func TestTaskListEmpty(t *testing.T) {
	t.Parallel()
	doc := render(t, TaskList(TaskListProps{}))
	require.Contains(t, doc.Find(`[data-testid="task-list-empty"]`).Text(), "No tasks yet")
	require.Equal(t, 0, doc.Find(`[data-testid="next-page"]`).Length())
}

func TestLoginShowsError(t *testing.T) {
	t.Parallel()
	doc := render(t, Login(LoginProps{Email: "a@b.c", Error: "Wrong email or password.", CSRFToken: "tok", Next: "/tasks"}))
	require.Equal(t, "Wrong email or password.", doc.Find(`[data-testid="login-error"]`).Text())
	require.Equal(t, "tok", doc.Find(`input[name="_csrf"]`).AttrOr("value", ""))
	require.Equal(t, "a@b.c", doc.Find(`[data-testid="login-email"]`).AttrOr("value", ""))
}
