package handlers

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/views/pages"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

func TestTaskRow(t *testing.T) {
	t.Parallel()
	secretApp := &pipeline.Pipeline{Name: "db", Params: []pipeline.Param{
		{Name: "cluster", Type: "string"}, {Name: "image_tag", Type: "string"}, {Name: "password", Type: "string", Secret: true},
	}}
	cat, err := pipeline.NewCatalog(append(pipeline.Builtin(), secretApp)...)
	require.NoError(t, err)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }

	t.Run("DeployTargetAndVersion", func(t *testing.T) {
		t.Parallel()
		r := taskRow(cat, &task.Task{ID: "x", Kind: task.KindDeploy, Pipeline: "web-service", State: task.StateCompleted,
			Params: json.RawMessage(`{"app":"shop","version":"1.3","env":"staging","replicas":2}`), CreatedAt: *at(3 * time.Hour),
			StartedAt: at(3 * time.Hour), FinishedAt: at(3*time.Hour - 95*time.Second)}, now)
		require.Equal(t, "shop · staging", r.Target)
		require.Equal(t, "app=shop, env=staging", r.TargetTitle)
		require.Equal(t, "1.3", r.Version)
		require.Equal(t, "1 m 35 s", r.Duration)
		require.False(t, r.Running)
		require.Equal(t, "3 h ago", r.Ago)
	})

	t.Run("SecretsNeverShown", func(t *testing.T) {
		t.Parallel()
		r := taskRow(cat, &task.Task{Kind: task.KindDeploy, Pipeline: "db", State: task.StateRunning,
			Params: json.RawMessage(`{"cluster":"main","image_tag":"v7","password":"[REDACTED]"}`), CreatedAt: *at(time.Minute),
			StartedAt: at(50 * time.Second)}, now)
		require.Equal(t, "main", r.Target, "the default target, less the version param")
		require.Equal(t, "v7", r.Version, "image_tag is the version by the rollback's rule")
		require.Equal(t, "50 s", r.Duration)
		require.True(t, r.Running, "ticks in the browser")
		require.Equal(t, "1 min ago", r.Ago)
	})

	t.Run("AgentAndUnknownPipeline", func(t *testing.T) {
		t.Parallel()
		r := taskRow(cat, &task.Task{Kind: task.KindAgent, State: task.StatePending, Prompt: "why is shop slow in production since this morning, and what changed?\nmore",
			CreatedAt: *at(49 * time.Hour)}, now)
		require.Equal(t, "why is shop slow in production since this morning, and what…", r.Target)
		require.Equal(t, "", r.Duration)
		require.Equal(t, "2 d ago", r.Ago)
		r = taskRow(cat, &task.Task{Kind: task.KindDeploy, Pipeline: "gone", Params: json.RawMessage(`{"app":"x"}`), CreatedAt: now}, now)
		require.Equal(t, "", r.Target)
		require.Equal(t, "just now", r.Ago)
	})
}

// A page of the list: the rows' targets, versions and times are read from
// each task's params in Go, with no query per row.
func BenchmarkTaskRows(b *testing.B) {
	cat, err := pipeline.NewCatalog(pipeline.Builtin()...)
	require.NoError(b, err)
	now := time.Now()
	tasks := make([]*task.Task, 50)
	for i := range tasks {
		started := now.Add(-time.Minute)
		tasks[i] = &task.Task{ID: "x", Kind: task.KindDeploy, Pipeline: "web-service", State: task.StateRunning, CreatedAt: now,
			StartedAt: &started, Params: json.RawMessage(`{"app":"shop","version":"1.2.3","env":"production","replicas":2}`)}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = taskRows(cat, tasks, nil)
	}
}

// TestTargetChips: the one rule the list, the inbox and the run page show a
// deploy's target by.
func TestTargetChips(t *testing.T) {
	t.Parallel()
	params := []pipeline.Param{{Name: "app", Type: "string"}, {Name: "tag", Type: "string"}, {Name: "env", Type: "string"},
		{Name: "regions", Type: "list"}, {Name: "token", Type: "string", Secret: true}}
	byDefault := &pipeline.Pipeline{Name: "d", Params: params}
	written := &pipeline.Pipeline{Name: "w", Params: params, Target: []string{"env", "token", "app"}}
	for _, c := range []struct {
		name   string
		p      *pipeline.Pipeline
		params map[string]any
		want   []pages.Param
	}{
		{"DefaultTargetLessTheVersionParam", byDefault, map[string]any{"app": "shop", "tag": "v7", "env": "prod", "token": "[REDACTED]"},
			[]pages.Param{{Name: "app", Value: "shop"}, {Name: "env", Value: "prod"}}},
		{"WrittenTargetInTheParamsOrderWithoutSecrets", written, map[string]any{"app": "shop", "env": "prod", "token": "[REDACTED]"},
			[]pages.Param{{Name: "app", Value: "shop"}, {Name: "env", Value: "prod"}}},
		{"MissingAndNullLeftOut", byDefault, map[string]any{"app": "shop", "env": nil},
			[]pages.Param{{Name: "app", Value: "shop"}}},
		{"ListsAsJSON", byDefault, map[string]any{"regions": []any{"eu", "us"}},
			[]pages.Param{{Name: "regions", Value: `["eu","us"]`}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, targetChips(c.p, c.params))
		})
	}
}
