package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/llmtest"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// pendingApproval returns the task's one pending approval.
func (b *testBundle) pendingApproval(t *testing.T, id string) store.Approval {
	t.Helper()
	aps, err := b.st.ApprovalList(t.Context(), b.creator.TeamIDs(), id)
	require.NoError(t, err)
	var out []store.Approval
	for _, a := range aps {
		if a.State == "pending" {
			out = append(out, a)
		}
	}
	require.Len(t, out, 1)
	return out[0]
}

func (b *testBundle) decide(t *testing.T, taskID, approvalID string, approve bool, who string, comment string) error {
	var actorID, actor, role string
	switch who {
	case "creator":
		actorID, actor, role = b.creator.ID, b.creator.Email, "deployer"
	case "deployer":
		actorID, actor, role = b.deployer.ID, b.deployer.Email, "deployer"
	case "approver":
		actorID, actor, role = b.approver.ID, b.approver.Email, "approver"
	}
	_, err := b.st.ApprovalDecide(t.Context(), store.ApprovalDecideParams{TeamIDs: b.creator.TeamIDs(), TaskID: taskID, ApprovalID: approvalID,
		Approve: approve, ActorID: actorID, Actor: actor, ActorRole: role, Comment: comment})
	return err
}

func TestAgentHumans(t *testing.T) {
	t.Parallel()

	t.Run("MutatingCallWaitsForApprovalThenRunsExactlyThatCall", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		args := map[string]any{"pipeline": "web-service", "params": map[string]any{"app": "shop", "version": "2.0.0", "env": "staging"}}
		b.llm.Push(
			llmtest.Reply{Content: "I will deploy shop 2.0.0.", ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "start_deploy", args)}},
			llmtest.Reply{Content: "Deploy started."},
		)
		tk := b.submit(t, "Deploy shop 2.0.0 to staging")
		b.wait(t, tk.ID, task.StateAwaitingApproval)
		require.Empty(t, b.deploys(t), "nothing runs before a person confirms")
		a := b.pendingApproval(t, tk.ID)
		require.Equal(t, "tool_call", a.Kind)
		require.Equal(t, "start_deploy", a.Step)
		var detail struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
			Plan      struct {
				Pipeline string         `json:"pipeline"`
				Params   map[string]any `json:"params"`
			} `json:"plan"`
		}
		require.NoError(t, json.Unmarshal(a.Detail, &detail))
		require.Equal(t, "start_deploy", detail.Tool)
		require.JSONEq(t, `{"pipeline":"web-service","params":{"app":"shop","version":"2.0.0","env":"staging"}}`, string(detail.Arguments))
		require.Equal(t, "2.0.0", detail.Plan.Params["version"])

		// Another deployer may not confirm; the creator may.
		require.ErrorIs(t, b.decide(t, tk.ID, a.ID, true, "deployer", ""), store.ErrForbidden)
		require.NoError(t, b.decide(t, tk.ID, a.ID, true, "creator", "go"))
		done := b.wait(t, tk.ID, task.StateCompleted)
		require.JSONEq(t, `{"text":"Deploy started."}`, string(done.Result))

		deploys := b.deploys(t)
		require.Len(t, deploys, 1)
		require.Equal(t, b.creator.Email, deploys[0].CreatedBy, "the deploy is created by the agent task's creator")
		require.Equal(t, "web-service", deploys[0].Pipeline)
		require.JSONEq(t, `{"app":"shop","version":"2.0.0","env":"staging","replicas":1}`, string(deploys[0].Params))
		reqs := b.llm.Requests()
		require.Len(t, reqs, 2)
		out, ok := toolMessage(reqs[1], "c1")
		require.True(t, ok)
		require.Contains(t, out, deploys[0].ID)
		// The approval request and decision are events of the task.
		require.Subset(t, types(b.events(t, tk.ID), "approval."), []string{"approval.requested", "approval.decided"})
	})

	t.Run("StartDeployMasksSecretParamsButDeploysThem", func(t *testing.T) {
		t.Parallel()
		const secret = "s3cr3t-Hunter-42"
		b := setup(t, &setupOpts{pipelines: rollbackPipelines()})
		args := map[string]any{"pipeline": "image-deploy", "params": map[string]any{"service": "api", "image_tag": "a1", "db_password": secret}}
		b.llm.Push(
			llmtest.Reply{Content: "Deploying api a1 with password " + secret + ".", ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "start_deploy", args)}},
			llmtest.Reply{Content: "Started api a1; the password was " + secret + "."},
		)
		tk := b.submit(t, "Deploy api a1")
		b.wait(t, tk.ID, task.StateAwaitingApproval)
		a := b.pendingApproval(t, tk.ID)
		require.NotContains(t, string(a.Detail), secret)
		var detail struct {
			Arguments struct {
				Params map[string]any `json:"params"`
			} `json:"arguments"`
			Plan struct {
				Params map[string]any `json:"params"`
			} `json:"plan"`
		}
		require.NoError(t, json.Unmarshal(a.Detail, &detail))
		require.Equal(t, map[string]any{"service": "api", "image_tag": "a1", "db_password": "[REDACTED]"}, detail.Arguments.Params)
		require.Equal(t, map[string]any{"service": "api", "image_tag": "a1", "region": "eu", "db_password": "[REDACTED]"}, detail.Plan.Params,
			"the person sees the whole plan but the secret")

		require.NoError(t, b.decide(t, tk.ID, a.ID, true, "creator", ""))
		done := b.wait(t, tk.ID, task.StateCompleted)
		require.NotContains(t, string(done.Result), secret)

		deploys := b.deploys(t)
		require.Len(t, deploys, 1)
		require.JSONEq(t, `{"service":"api","image_tag":"a1","region":"eu","db_password":"[REDACTED]"}`, string(deploys[0].Params),
			"the deploy shows that the secret was set, not what to")
		b.wait(t, deploys[0].ID, task.StateCompleted)
		require.JSONEq(t, `{"service":"api","image_tag":"a1","region":"eu","db_password":"`+secret+`"}`, b.ranWith(t, deploys[0].ID),
			"the approved deploy runs with the real value")

		var toolCall bool
		for _, e := range b.events(t, tk.ID) {
			raw, err := json.Marshal(e)
			require.NoError(t, err)
			require.NotContains(t, string(raw), secret, "event %d (%s)", e.Seq, e.Type)
			if e.Type == task.EventAgentToolCall {
				toolCall = true
				require.Contains(t, string(e.Data), "[REDACTED]")
				require.Contains(t, e.Message, "[REDACTED]")
			}
		}
		require.True(t, toolCall)
		aps, err := b.st.ApprovalList(t.Context(), b.creator.TeamIDs(), tk.ID)
		require.NoError(t, err)
		for _, a := range aps {
			require.NotContains(t, string(a.Detail), secret)
		}
		reqs := b.llm.Requests()
		require.Len(t, reqs, 2)
		for _, r := range reqs {
			require.NotContains(t, r.Raw, secret)
		}
		out, ok := toolMessage(reqs[1], "c1")
		require.True(t, ok)
		require.Contains(t, out, deploys[0].ID)
		require.Contains(t, out, "[REDACTED]")
	})

	t.Run("RejectedRollbackIsToldToTheModel", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		for _, v := range []string{"1.0.0", "1.1.0"} {
			d := b.deploy(t, "web-service", map[string]any{"app": "shop", "version": v, "env": "staging"})
			b.wait(t, d.ID, task.StateCompleted)
		}
		b.llm.Push(
			llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "rollback", map[string]any{"app": "shop", "env": "staging"})}},
			llmtest.Reply{Content: "Understood, no rollback."},
		)
		tk := b.submit(t, "shop is broken, roll it back")
		b.wait(t, tk.ID, task.StateAwaitingApproval)
		a := b.pendingApproval(t, tk.ID)
		var detail struct {
			Plan struct {
				Params       map[string]any `json:"params"`
				RollbackFrom string         `json:"rollback_from"`
			} `json:"plan"`
		}
		require.NoError(t, json.Unmarshal(a.Detail, &detail))
		require.Equal(t, "1.0.0", detail.Plan.Params["version"], "the previous version")
		require.Equal(t, "1.1.0", detail.Plan.RollbackFrom)

		require.NoError(t, b.decide(t, tk.ID, a.ID, false, "approver", "not during the sale"))
		b.wait(t, tk.ID, task.StateCompleted)
		require.Len(t, b.deploys(t), 2, "a rejected call never runs")
		out, ok := toolMessage(b.llm.Requests()[1], "c1")
		require.True(t, ok)
		require.Contains(t, out, "rejected")
		require.Contains(t, out, "not during the sale")
	})

	t.Run("ApprovedRollbackRedeploysThePreviousVersion", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		for _, v := range []string{"1.0.0", "1.1.0"} {
			d := b.deploy(t, "web-service", map[string]any{"app": "shop", "version": v, "env": "staging"})
			b.wait(t, d.ID, task.StateCompleted)
		}
		b.llm.Push(
			llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "rollback", map[string]any{"app": "shop", "env": "staging"})}},
			llmtest.Reply{Content: "Rolled back."},
		)
		tk := b.submit(t, "roll shop back")
		b.wait(t, tk.ID, task.StateAwaitingApproval)
		require.NoError(t, b.decide(t, tk.ID, b.pendingApproval(t, tk.ID).ID, true, "approver", ""))
		b.wait(t, tk.ID, task.StateCompleted)
		deploys := b.deploys(t)
		require.Len(t, deploys, 3)
		require.JSONEq(t, `{"app":"shop","version":"1.0.0","env":"staging","replicas":1}`, string(deploys[0].Params))
		require.Equal(t, b.creator.Email, deploys[0].CreatedBy)
	})

	t.Run("QuestionParksTheTaskAndTheAnswerResumesIt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.llm.Push(
			llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("q1", "ask_user", map[string]any{"question": "Which environment?"})}},
			llmtest.Reply{Content: "Staging it is."},
		)
		tk := b.submit(t, "check the app")
		b.wait(t, tk.ID, task.StateAwaitingInput)
		qs, err := b.st.AgentQuestionList(t.Context(), b.creator.TeamIDs(), tk.ID)
		require.NoError(t, err)
		require.Len(t, qs, 1)
		require.Equal(t, "Which environment?", qs[0].Text)
		require.Equal(t, []string{"Which environment?"}, b.state(t, tk.ID).OpenQuestions)
		evs := b.events(t, tk.ID)
		var asked bool
		for _, e := range evs {
			if e.Type == task.EventAgentQuestion {
				asked = true
				require.Contains(t, string(e.Data), qs[0].ID)
			}
		}
		require.True(t, asked)

		_, err = b.st.AgentQuestionAnswer(t.Context(), store.AgentQuestionAnswerParams{TeamIDs: b.creator.TeamIDs(), TaskID: tk.ID,
			QuestionID: qs[0].ID, Text: "staging", Actor: b.creator.Email})
		require.NoError(t, err)
		_, err = b.st.AgentQuestionAnswer(t.Context(), store.AgentQuestionAnswerParams{TeamIDs: b.creator.TeamIDs(), TaskID: tk.ID,
			QuestionID: qs[0].ID, Text: "production", Actor: b.creator.Email})
		require.ErrorIs(t, err, store.ErrConflict, "exactly one answer")
		b.wait(t, tk.ID, task.StateCompleted)
		out, ok := toolMessage(b.llm.Requests()[1], "q1")
		require.True(t, ok)
		require.Contains(t, out, `"answer":"staging"`)
		require.Empty(t, b.state(t, tk.ID).OpenQuestions)
	})

	t.Run("CancelWhileWaitingForAnAnswer", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.llm.Push(llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("q1", "ask_user", map[string]any{"question": "Sure?"})}})
		tk := b.submit(t, "do it")
		b.wait(t, tk.ID, task.StateAwaitingInput)
		_, err := b.st.TaskCancel(t.Context(), b.creator.TeamIDs(), tk.ID, b.creator.Email)
		require.NoError(t, err)
		b.wait(t, tk.ID, task.StateCancelled)
		qs, err := b.st.AgentQuestionList(t.Context(), b.creator.TeamIDs(), tk.ID)
		require.NoError(t, err)
		require.Equal(t, "expired", qs[0].State)
	})
}
