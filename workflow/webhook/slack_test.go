package webhook_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/task"
	"flightdeck/workflow/webhook"
)

// TestSlackFormat: a subscription with format slack receives incoming-
// webhook messages over HTTP ({text, blocks}) for an approval request, a
// failed step waiting for a decision and a failed task; text alone names
// the task, what is asked, of whom, and carries the link.
func TestSlackFormat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	secret := webhook.NewSecret()
	recv := newReceiver(t, secret, func(int) int { return 200 })
	_, err := b.st.WebhookCreate(t.Context(), store.WebhookCreateParams{TeamID: b.admin.Memberships[0].TeamID,
		URL: recv.srv.URL, Events: []string{"approval.requested", "task.paused", "task.failed", "task.needs_attention"},
		Secret: secret, CreatedByID: b.admin.ID, Format: webhook.FormatSlack})
	require.NoError(t, err)
	g, err := webhook.NewGuard([]string{"127.0.0.1"}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	svc := webhook.New(b.st, b.hub, webhook.Config{Guard: g, Timeout: 2 * time.Second, Poll: 20 * time.Millisecond,
		Logger: testLogger(t), BaseURL: "http://127.0.0.1:8080"})
	go func() { _ = svc.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	appr := testfactory.Task(t, b.st, b.admin, nil)
	testfactory.AwaitingApproval(t, b.st, appr.ID, []string{"approver", "admin"})
	failed := testfactory.Task(t, b.st, b.admin, nil)
	cs, err := b.st.TaskClaim(t.Context(), "test", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	msg := "health check failed <!channel>"
	data, _ := json.Marshal(map[string]any{"state": "failed", "error": msg})
	_, err = b.st.TaskWrites(t.Context(), []store.TaskWrite{{ID: failed.ID, Token: cs[0].Task.LeaseToken, State: task.StateFailed,
		Release: true, Error: &msg, Events: []task.Event{{Type: task.EventTaskFailed, Status: task.StatusError, Message: "failed", Data: data}}}})
	require.NoError(t, err)

	got := map[string]map[string]any{} // task id → body
	deadline := time.After(15 * time.Second)
	for len(got) < 2 {
		select {
		case d := <-recv.got:
			require.True(t, d.sigOK, "signed like every delivery")
			text, _ := d.body["text"].(string)
			switch {
			case strings.Contains(text, appr.ID) || strings.Contains(text, "approval"):
				got[appr.ID] = d.body
			default:
				got[failed.ID] = d.body
			}
		case <-deadline:
			t.Fatalf("timed out; got %v", got)
		}
	}
	a := got[appr.ID]
	text := a["text"].(string)
	require.True(t, strings.HasPrefix(text, "[flightdeck] noop "), text)
	require.Contains(t, text, "needs approval")
	require.Contains(t, text, "any approver or admin of team acme except admin@acme.test, who asked")
	require.Contains(t, text, "http://127.0.0.1:8080/approvals")
	blocks := a["blocks"].([]any)
	require.GreaterOrEqual(t, len(blocks), 3)
	for _, bl := range blocks {
		require.Contains(t, []string{"section", "actions"}, bl.(map[string]any)["type"])
	}
	last := blocks[len(blocks)-1].(map[string]any)
	require.Equal(t, "actions", last["type"])
	button := last["elements"].([]any)[0].(map[string]any)
	require.Equal(t, "button", button["type"])
	require.Equal(t, "http://127.0.0.1:8080/approvals", button["url"])
	fields := blocks[1].(map[string]any)["fields"].([]any)
	require.Contains(t, fields, map[string]any{"type": "mrkdwn", "text": "*Asked of*\nany approver or admin of team acme except admin@acme.test, who asked"})

	f := got[failed.ID]
	ftext := f["text"].(string)
	require.Contains(t, ftext, "[flightdeck] noop failed. Error: health check failed &lt;!channel&gt; http://127.0.0.1:8080/tasks/"+failed.ID)
	require.NotContains(t, ftext, "<!channel>", "a task's text cannot ping a channel")
}
