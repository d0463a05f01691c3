package handlers

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/pipeline"
)

// An agent's tool call reads as named values, and a rollback's plan says
// which version replaces which, without a database lookup.
func TestInboxItemToolCall(t *testing.T) {
	t.Parallel()
	cat, err := pipeline.NewCatalog(pipeline.Builtin()...)
	require.NoError(t, err)
	h := &Handler{pipelines: cat}
	detail := `{"tool":"rollback","call_id":"c1","arguments":{"app":"shop","env":"production","note":{"why":"5xx"}},
		"plan":{"pipeline":"web-service","params":{"app":"shop","version":"1.2","env":"production","replicas":1},"priority":"high","rollback_from":"1.3"}}`
	it := store.InboxItem{Approval: store.Approval{ID: "a", TaskID: "t", Step: "rollback", Kind: "tool_call", Roles: []string{"approver", "admin"},
		Detail: json.RawMessage(detail)}, Kind: "agent", CreatedBy: "dev@acme.test"}
	v, lookup := h.inboxItem(it, time.Now())
	require.Nil(t, lookup, "the plan says what it replaces")
	require.True(t, v.ToolCall)
	require.Equal(t, "Agent task", v.Title)
	require.Equal(t, "rollback", v.Tool)
	require.Equal(t, []pages.KV{{Key: "app", Value: "shop"}, {Key: "env", Value: "production"}, {Key: "note", Value: `{"why":"5xx"}`}}, v.Args)
	require.Contains(t, v.Plan, pages.KV{Key: "rollback_from", Value: "1.3"})
	require.Equal(t, "shop · production", v.Target)
	require.Equal(t, "1.3", v.From)
	require.Equal(t, "1.2", v.To)
	require.Equal(t, "version", v.VersionParam)
}
