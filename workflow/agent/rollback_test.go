package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/llmtest"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// rollbackPipelines: one whose version parameter is not called version
// (and that has a secret), one without a version parameter.
func rollbackPipelines() []*pipeline.Pipeline {
	steps := []pipeline.Step{{Name: "release", Action: "noop"}}
	return []*pipeline.Pipeline{
		{Name: "image-deploy", Steps: steps, Params: []pipeline.Param{
			{Name: "service", Type: "string", Pattern: "^[a-z]+$", Required: true},
			{Name: "image_tag", Type: "string", Pattern: "^[a-z0-9.]+$", Required: true},
			{Name: "region", Type: "enum", Values: []string{"eu", "us"}, Default: "eu"},
			{Name: "db_password", Type: "string", Secret: true},
		}},
		{Name: "site-config", Steps: steps, Params: []pipeline.Param{
			{Name: "site", Type: "string", Required: true},
			{Name: "mode", Type: "enum", Values: []string{"blue", "green"}, Required: true},
		}},
	}
}

// rollbackPlan is the plan part of a rollback approval's detail.
type rollbackPlan struct {
	Pipeline         string         `json:"pipeline"`
	Params           map[string]any `json:"params"`
	RollbackFrom     string         `json:"rollback_from"`
	RollbackFromTask string         `json:"rollback_from_task"`
	RollbackTo       string         `json:"rollback_to_task"`
}

func (b *testBundle) rollbackPlan(t *testing.T, agentTaskID string) (string, rollbackPlan) {
	t.Helper()
	b.wait(t, agentTaskID, task.StateAwaitingApproval)
	a := b.pendingApproval(t, agentTaskID)
	var detail struct {
		Plan rollbackPlan `json:"plan"`
	}
	require.NoError(t, json.Unmarshal(a.Detail, &detail))
	return a.ID, detail.Plan
}

// history deploys each params in order, one after the other.
func (b *testBundle) history(t *testing.T, pipelineName string, params ...map[string]any) []*task.Task {
	t.Helper()
	var out []*task.Task
	for _, p := range params {
		d := b.deploy(t, pipelineName, p)
		b.wait(t, d.ID, task.StateCompleted)
		out = append(out, d)
	}
	return out
}

func TestAgentRollback(t *testing.T) {
	t.Parallel()

	t.Run("VersionLikeParameterOfAnyPipeline", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &setupOpts{pipelines: rollbackPipelines()})
		h := b.history(t, "image-deploy",
			map[string]any{"service": "api", "image_tag": "a1", "db_password": "pw-one-secret"}, // region: the default
			map[string]any{"service": "api", "image_tag": "b1", "region": "us"},
			map[string]any{"service": "api", "image_tag": "a2", "region": "eu", "db_password": "pw-two-secret"},
			map[string]any{"service": "web", "image_tag": "z1"},
			map[string]any{"service": "api", "image_tag": "a2", "region": "eu", "db_password": "pw-two-secret"}, // same version again
		)
		b.llm.Push(
			llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "rollback",
				map[string]any{"pipeline": "image-deploy", "target": map[string]any{"service": "api"}})}},
			llmtest.Reply{Content: "Rolled api back to a1."},
		)
		tk := b.submit(t, "roll api back in eu")
		approvalID, plan := b.rollbackPlan(t, tk.ID)
		require.Equal(t, rollbackPlan{Pipeline: "image-deploy",
			Params:       map[string]any{"service": "api", "image_tag": "a1", "region": "eu", "db_password": "[REDACTED]"},
			RollbackFrom: "a2", RollbackFromTask: h[4].ID, RollbackTo: h[0].ID}, plan)

		require.NoError(t, b.decide(t, tk.ID, approvalID, true, "approver", ""))
		b.wait(t, tk.ID, task.StateCompleted)
		deploys := b.deploys(t)
		require.Len(t, deploys, 6)
		require.JSONEq(t, `{"service":"api","image_tag":"a1","region":"eu","db_password":"[REDACTED]"}`, string(deploys[0].Params),
			"the repeated deploy shows its secret as set")
		for _, r := range b.llm.Requests() {
			require.NotContains(t, r.Raw, "pw-one-secret")
		}
		rolledBack := b.wait(t, deploys[0].ID, task.StateCompleted)
		require.JSONEq(t, `{"service":"api","image_tag":"a1","region":"eu","db_password":"pw-one-secret"}`, b.ranWith(t, deploys[0].ID),
			"the repeated deploy gets its secret back")

		// Rolling the rollback back, named by a deploy of the target.
		b.llm.Push(
			llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "rollback", map[string]any{"task_id": rolledBack.ID})}},
			llmtest.Reply{Content: "ok"},
		)
		tk2 := b.submit(t, "undo that")
		_, plan = b.rollbackPlan(t, tk2.ID)
		require.Equal(t, "a1", plan.RollbackFrom)
		require.Equal(t, "a2", plan.Params["image_tag"])
		require.Equal(t, h[4].ID, plan.RollbackTo, "the newest deploy of the previous version")
	})

	t.Run("TargetsEnvironmentAnswers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &setupOpts{pipelines: rollbackPipelines()})
		h := b.history(t, "web-service",
			map[string]any{"app": "shop", "version": "1.0.0", "env": "staging"},
			map[string]any{"app": "shop", "version": "1.0.0", "env": "production"},
			map[string]any{"app": "shop", "version": "1.1.0", "env": "staging"},
			map[string]any{"app": "shop", "version": "1.1.0", "env": "staging"},
		)
		b.llm.Push(
			llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "rollback", map[string]any{"app": "shop", "env": "staging"})}},
			llmtest.Reply{Content: "ok"},
		)
		tk := b.submit(t, "roll shop staging back")
		_, plan := b.rollbackPlan(t, tk.ID)
		require.Equal(t, rollbackPlan{Pipeline: "web-service", Params: map[string]any{"app": "shop", "version": "1.0.0", "env": "staging", "replicas": float64(1)},
			RollbackFrom: "1.1.0", RollbackFromTask: h[3].ID, RollbackTo: h[0].ID}, plan)
	})

	t.Run("DeployStoredBeforeSecretsWereKeptApart", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &setupOpts{pipelines: rollbackPipelines()})
		old := b.legacyDeploy(t, "image-deploy", map[string]any{"service": "api", "image_tag": "a1", "db_password": "pw-legacy-secret"})
		b.wait(t, old.ID, task.StateCompleted)
		b.history(t, "image-deploy", map[string]any{"service": "api", "image_tag": "a2", "db_password": "pw-new-secret"})
		b.llm.Push(
			llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "rollback",
				map[string]any{"pipeline": "image-deploy", "target": map[string]any{"service": "api"}})}},
			llmtest.Reply{Content: "ok"},
		)
		tk := b.submit(t, "roll api back")
		approvalID, plan := b.rollbackPlan(t, tk.ID)
		require.Equal(t, map[string]any{"service": "api", "image_tag": "a1", "region": "eu", "db_password": "[REDACTED]"}, plan.Params)
		require.Equal(t, old.ID, plan.RollbackTo)
		require.NoError(t, b.decide(t, tk.ID, approvalID, true, "approver", ""))
		b.wait(t, tk.ID, task.StateCompleted)
		deploys := b.deploys(t)
		require.Len(t, deploys, 3)
		require.JSONEq(t, `{"service":"api","image_tag":"a1","region":"eu","db_password":"[REDACTED]"}`, string(deploys[0].Params))
		b.wait(t, deploys[0].ID, task.StateCompleted)
		require.JSONEq(t, `{"service":"api","image_tag":"a1","region":"eu","db_password":"pw-legacy-secret"}`, b.ranWith(t, deploys[0].ID),
			"the old deploy's secret, read from its params")
		for _, r := range b.llm.Requests() {
			require.NotContains(t, r.Raw, "pw-legacy-secret")
		}
	})

	t.Run("PipelineWithoutAVersionParameter", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &setupOpts{pipelines: rollbackPipelines()})
		h := b.history(t, "site-config",
			map[string]any{"site": "x", "mode": "blue"},
			map[string]any{"site": "x", "mode": "green"},
			map[string]any{"site": "y", "mode": "blue"},
			map[string]any{"site": "x", "mode": "green"},
		)
		b.llm.Push(
			llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "rollback",
				map[string]any{"pipeline": "site-config", "target": map[string]any{"site": "x"}})}},
			llmtest.Reply{Content: "ok"},
		)
		tk := b.submit(t, "roll site x back")
		_, plan := b.rollbackPlan(t, tk.ID)
		require.Equal(t, rollbackPlan{Pipeline: "site-config", Params: map[string]any{"site": "x", "mode": "blue"},
			RollbackFromTask: h[3].ID, RollbackTo: h[0].ID}, plan)
	})

	t.Run("NothingToRollBackToIsAToolError", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &setupOpts{pipelines: rollbackPipelines()})
		b.history(t, "web-service", map[string]any{"app": "shop", "version": "1.0.0", "env": "staging"})
		b.history(t, "site-config", map[string]any{"site": "x", "mode": "blue"}, map[string]any{"site": "x", "mode": "blue"})
		b.llm.Push(llmtest.Reply{Content: "fine"})
		other := b.submit(t, "not a deploy")
		b.wait(t, other.ID, task.StateCompleted)
		calls := map[string]map[string]any{
			"none":      {"pipeline": "image-deploy", "target": map[string]any{"service": "api"}},
			"once":      {"app": "shop", "env": "staging"},
			"same":      {"pipeline": "site-config", "target": map[string]any{"site": "x"}},
			"version":   {"pipeline": "image-deploy", "target": map[string]any{"service": "api", "image_tag": "a1"}},
			"secret":    {"pipeline": "image-deploy", "target": map[string]any{"service": "api", "db_password": "x"}},
			"missing":   {"pipeline": "image-deploy", "target": map[string]any{"region": "us"}},
			"unknown":   {"pipeline": "image-deploy", "target": map[string]any{"service": "api", "zone": "b"}},
			"empty":     {"pipeline": "site-config"},
			"notdeploy": {"task_id": other.ID},
			"both":      {"task_id": other.ID, "app": "shop"},
			"nosuch":    {"pipeline": "nope", "app": "shop"},
		}
		var tcs []llmtest.Call
		for id, args := range calls {
			tcs = append(tcs, llmtest.ToolCall(id, "rollback", args))
		}
		b.llm.Push(llmtest.Reply{ToolCalls: tcs}, llmtest.Reply{Content: "Nothing to roll back."})
		tk := b.submit(t, "roll everything back")
		b.wait(t, tk.ID, task.StateCompleted)
		require.Len(t, b.deploys(t), 3, "nothing was deployed")
		reqs := b.llm.Requests()
		require.Len(t, reqs, 3)
		for id, want := range map[string]string{
			"none":      "no completed deploy of image-deploy service=api region=eu: nothing to roll back",
			"once":      "web-service app=shop env=staging replicas=1 has only ever run version 1.0.0: no previous version to roll back to",
			"same":      "every completed deploy of site-config site=x used the same parameters: nothing to roll back to",
			"version":   "leave image_tag out of the target",
			"secret":    "db_password is a secret parameter",
			"missing":   "target.service is required (image-deploy takes service, image_tag, region)",
			"unknown":   "target.zone unknown parameter",
			"empty":     "name the target",
			"notdeploy": "is not a deploy",
			"both":      "give task_id or the target, not both",
			"nosuch":    `unknown pipeline "nope"`,
		} {
			out, ok := toolMessage(reqs[2], id)
			require.True(t, ok, id)
			require.Contains(t, out, "error: ", id)
			require.Contains(t, out, want, id)
		}
	})
}
