package saga_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/saga"
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

// RepeatSecrets, which both a re-run and an agent's rollback call, puts
// back the values the repeated deploy ran with: from its secret params,
// else from its public ones unless they are the stand-in; a secret it did
// not set is left out.
func TestRepeatSecrets(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	p := &pipeline.Pipeline{Name: "with-secrets", Params: []pipeline.Param{{Name: "app", Type: "string"},
		{Name: "pw", Type: "string", Secret: true}, {Name: "token", Type: "string", Secret: true}}}
	insert := func(public, secret string) *task.Task {
		t.Helper()
		in := store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Kind: task.KindDeploy,
			Pipeline: p.Name, Params: json.RawMessage(public), Priority: task.PriorityNormal, MaxAttempts: 5}
		if secret != "" {
			in.SecretParams = json.RawMessage(secret)
		}
		tk, _, err := st.TaskInsert(t.Context(), in)
		require.NoError(t, err)
		return tk
	}
	shown := func() map[string]any {
		return map[string]any{"app": "shop", "pw": pipeline.Redacted, "token": pipeline.Redacted}
	}
	for name, c := range map[string]struct {
		public, secret string
		want           map[string]any
	}{
		"KeptApart":         {`{"app":"shop","pw":"[REDACTED]","token":"[REDACTED]"}`, `{"pw":"pw-1","token":"tok-1"}`, map[string]any{"app": "shop", "pw": "pw-1", "token": "tok-1"}},
		"StoredBeforeApart": {`{"app":"shop","pw":"pw-old"}`, "", map[string]any{"app": "shop", "pw": "pw-old"}},
		"StandInOnly":       {`{"app":"shop","pw":"[REDACTED]"}`, "", map[string]any{"app": "shop"}},
		"NotYetSecret":      {`{"app":"shop","pw":"[REDACTED]","token":"tok-public"}`, `{"pw":"pw-2"}`, map[string]any{"app": "shop", "pw": "pw-2", "token": "tok-public"}},
		"NoneSet":           {`{"app":"shop"}`, "", map[string]any{"app": "shop"}},
	} {
		t.Run(name, func(t *testing.T) {
			params := shown()
			require.NoError(t, saga.RepeatSecrets(t.Context(), st, insert(c.public, c.secret), p, params))
			require.Equal(t, c.want, params)
		})
	}

	t.Run("UnreadableParams", func(t *testing.T) {
		src := insert(`{"app":"shop"}`, "") // the store refuses to keep what is not an object
		src.Params = json.RawMessage(`["app"]`)
		require.ErrorIs(t, saga.RepeatSecrets(t.Context(), st, src, p, shown()), saga.ErrUnreadableParams)
	})
	t.Run("NoReadWithoutSecrets", func(t *testing.T) {
		params := map[string]any{"app": "shop"}
		gone := &task.Task{ID: "not-a-task", TeamID: u.Memberships[0].TeamID}
		require.NoError(t, saga.RepeatSecrets(t.Context(), st, gone, &pipeline.Pipeline{Name: "plain", Params: p.Params[:1]}, params))
		require.Equal(t, map[string]any{"app": "shop"}, params)
		require.ErrorIs(t, saga.RepeatSecrets(t.Context(), st, gone, p, params), store.ErrNotFound)
	})
}

// The keys a submit stores (concurrency key, target key) are shown in the
// clear, so a key template that names a secret param gets its stand-in,
// never the value.
func TestNewDeployKeysHoldNoSecret(t *testing.T) {
	t.Parallel()
	const secret = "pw-Secret-0815"
	p := &pipeline.Pipeline{Name: "keyed-secret",
		Params:      []pipeline.Param{{Name: "app", Type: "string", Required: true}, {Name: "pw", Type: "string", Secret: true}},
		Concurrency: &pipeline.Concurrency{Key: "{{ .params.app }}/{{ .params.pw }}"},
		Steps:       []pipeline.Step{{Name: "a", Action: "noop"}}}
	params, ferr := p.Validate(json.RawMessage(`{"app":"shop","pw":"` + secret + `"}`))
	require.Nil(t, ferr)
	var in store.TaskInsertParams
	require.NoError(t, saga.NewDeploy(&in, p, params, "acme"))
	require.Equal(t, "shop/"+pipeline.Redacted, in.ConcurrencyKey)
	require.Equal(t, `{"app":"shop"}`, in.TargetKey)
	require.NotContains(t, string(in.Params), secret)
	require.Contains(t, string(in.SecretParams), secret, "the step still gets the value")
}
