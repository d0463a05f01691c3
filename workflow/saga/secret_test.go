package saga_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// A deploy's secret param, stored apart as a submission stores it: the
// steps run with the real value, and the approval, events and task show
// only that it was set.
func TestSecretParamRunsButIsNotShown(t *testing.T) {
	t.Parallel()
	const secret = "pw-Secret-4711"
	p := &pipeline.Pipeline{Name: "with-secret",
		Params: []pipeline.Param{{Name: "app", Type: "string", Required: true}, {Name: "pw", Type: "string", Secret: true}},
		Steps: []pipeline.Step{{Name: "show", Action: "test.echo"},
			{Name: "risky", Action: "test.echo", Approval: &pipeline.Approval{Roles: []string{"approver"}}}}}
	b := setup(t, p)
	validated, ferr := p.Validate(json.RawMessage(`{"app":"shop","pw":"` + secret + `"}`))
	require.Nil(t, ferr)
	pub, sec := p.SplitSecrets(validated)
	public, _ := json.Marshal(pub)
	secrets, _ := json.Marshal(sec)
	tk, _, err := b.st.TaskInsert(t.Context(), store.TaskInsertParams{TeamID: b.creator.Memberships[0].TeamID, CreatedByID: b.creator.ID,
		Kind: task.KindDeploy, Pipeline: p.Name, Params: public, SecretParams: secrets, Priority: task.PriorityNormal, MaxAttempts: 5})
	require.NoError(t, err)

	b.wait(t, tk.ID, task.StateAwaitingApproval)
	require.Equal(t, map[string]any{"app": "shop", "pw": secret}, b.rec.paramsOf("show"), "the step gets the real value")
	aps, err := b.st.ApprovalList(t.Context(), b.creator.TeamIDs(), tk.ID)
	require.NoError(t, err)
	require.Len(t, aps, 1)
	require.JSONEq(t, `{"action":"test.echo","params":{"app":"shop","pw":"[REDACTED]"}}`, string(aps[0].Detail),
		"the approver sees the public params")

	_, err = b.st.ApprovalDecide(t.Context(), store.ApprovalDecideParams{TeamIDs: b.approver.TeamIDs(), TaskID: tk.ID, ApprovalID: aps[0].ID,
		Approve: true, ActorID: b.approver.ID, Actor: b.approver.Email, ActorRole: string(b.approver.Memberships[0].Role)})
	require.NoError(t, err)
	got := b.wait(t, tk.ID, task.StateCompleted)
	require.Equal(t, map[string]any{"app": "shop", "pw": secret}, b.rec.paramsOf("risky"), "also after the approval's resume")
	require.JSONEq(t, `{"app":"shop","pw":"[REDACTED]"}`, string(got.Params))

	var logged []string
	for _, e := range b.seqsGapFree(t, tk.ID) {
		raw, err := json.Marshal(e)
		require.NoError(t, err)
		require.NotContains(t, string(raw), secret, "event %d (%s)", e.Seq, e.Type)
		if e.Type == task.EventStepLog {
			logged = append(logged, e.Message)
		}
	}
	require.Contains(t, logged, "pw=[REDACTED]", "the echoed secret is redacted in step.log")
}

// An action that quotes a secret in its error or its output shows it
// nowhere: not in step errors, events, the task's error or its result.
func TestSecretQuotedByAnActionIsRedacted(t *testing.T) {
	t.Parallel()
	const secret = "pw-Quoted-0815"
	params := []pipeline.Param{{Name: "pw", Type: "string", Secret: true}}
	p := &pipeline.Pipeline{Name: "leaky", Params: params, Steps: []pipeline.Step{{Name: "fetch", Action: "test.leak"},
		{Name: "push", Action: "test.leak", Retries: 1, With: map[string]any{"fail": true}}}}
	ok := &pipeline.Pipeline{Name: "leaky-ok", Params: params, Steps: []pipeline.Step{{Name: "fetch", Action: "test.leak"}}}
	b := setup(t, p, ok)
	submit := func(p *pipeline.Pipeline) *task.Task {
		validated, ferr := p.Validate(json.RawMessage(`{"pw":"` + secret + `"}`))
		require.Nil(t, ferr)
		pub, sec := p.SplitSecrets(validated)
		public, _ := json.Marshal(pub)
		secrets, _ := json.Marshal(sec)
		tk, _, err := b.st.TaskInsert(t.Context(), store.TaskInsertParams{TeamID: b.creator.Memberships[0].TeamID, CreatedByID: b.creator.ID,
			Kind: task.KindDeploy, Pipeline: p.Name, Params: public, SecretParams: secrets, Priority: task.PriorityNormal, MaxAttempts: 5})
		require.NoError(t, err)
		return tk
	}
	done := b.wait(t, submit(ok).ID, task.StateCompleted)
	require.JSONEq(t, `{"steps":{"fetch":{"token":"[REDACTED]"}}}`, string(done.Result), "the result shows outputs, redacted")

	tk := submit(p)
	got := b.wait(t, tk.ID, task.StateFailed)
	raw, err := json.Marshal(got)
	require.NoError(t, err)
	require.NotContains(t, string(raw), secret, "the task's error and result")
	require.Contains(t, *got.Error, "deploy:[REDACTED]@registry.test", "the error still says what failed")
	steps, err := b.st.TaskSteps(t.Context(), b.creator.TeamIDs(), tk.ID)
	require.NoError(t, err)
	raw, err = json.Marshal(steps)
	require.NoError(t, err)
	require.NotContains(t, string(raw), secret, "step errors")
	for _, e := range b.seqsGapFree(t, tk.ID) {
		raw, err := json.Marshal(e)
		require.NoError(t, err)
		require.NotContains(t, string(raw), secret, "event %d (%s)", e.Seq, e.Type)
	}
}
