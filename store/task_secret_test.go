package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

func TestTaskSecretParams(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	other := testfactory.User(t, st, "b@rival.test", "rival", auth.RoleAdmin)
	insert := func(params, secret string) (*task.Task, error) {
		p := store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Kind: task.KindDeploy,
			Pipeline: "p", Priority: task.PriorityNormal, Params: json.RawMessage(params)}
		if secret != "" {
			p.SecretParams = json.RawMessage(secret)
		}
		tk, _, err := st.TaskInsert(ctx, p)
		return tk, err
	}

	split, err := insert(`{"app":"shop","pw":"[REDACTED]"}`, `{"pw":"s3cr3t-value"}`)
	require.NoError(t, err)
	legacy, err := insert(`{"app":"old","pw":"legacy-value"}`, "")
	require.NoError(t, err)
	none, err := insert(`{"app":"plain"}`, `{}`)
	require.NoError(t, err)

	t.Run("ReadsShowThePublicParams", func(t *testing.T) {
		require.JSONEq(t, `{"app":"shop","pw":"[REDACTED]"}`, string(split.Params), "as TaskInsert returns it")
		got, err := st.TaskGet(ctx, u.TeamIDs(), split.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"app":"shop","pw":"[REDACTED]"}`, string(got.Params))
		many, err := st.TaskGetMany(ctx, u.TeamIDs(), []string{split.ID})
		require.NoError(t, err)
		require.Len(t, many, 1)
		require.JSONEq(t, `{"app":"shop","pw":"[REDACTED]"}`, string(many[0].Params))
		list, _, err := st.TaskList(ctx, store.TaskListParams{TeamIDs: u.TeamIDs()})
		require.NoError(t, err)
		for _, tk := range list {
			require.NotContains(t, string(tk.Params), "s3cr3t-value")
		}
	})

	t.Run("TaskSecretParamsForWorkers", func(t *testing.T) {
		raw, err := st.TaskSecretParams(ctx, u.TeamIDs(), split.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"pw":"s3cr3t-value"}`, string(raw))
		raw, err = st.TaskSecretParams(ctx, u.TeamIDs(), legacy.ID)
		require.NoError(t, err)
		require.Nil(t, raw, "stored before secrets were kept apart")
		raw, err = st.TaskSecretParams(ctx, u.TeamIDs(), none.ID)
		require.NoError(t, err)
		require.Nil(t, raw, "an empty object is none")
		_, err = st.TaskSecretParams(ctx, other.TeamIDs(), split.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "another team's task")
		_, err = st.TaskSecretParams(ctx, u.TeamIDs(), "not-a-uuid")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("SecretParamsMustBeAnObject", func(t *testing.T) {
		for _, bad := range []string{`[1]`, `"pw"`, `{`} {
			_, err := insert(`{"app":"x"}`, bad)
			require.Error(t, err, bad)
		}
	})

	t.Run("TheClaimGetsTheRealParams", func(t *testing.T) {
		claimed, err := st.TaskClaim(ctx, "w1", 10, time.Minute)
		require.NoError(t, err)
		got := map[string]string{}
		for _, c := range claimed {
			got[c.Task.ID] = string(c.Task.Params)
		}
		require.Len(t, got, 3, "the bad inserts wrote nothing")
		require.JSONEq(t, `{"app":"shop","pw":"s3cr3t-value"}`, got[split.ID])
		require.JSONEq(t, `{"app":"old","pw":"legacy-value"}`, got[legacy.ID])
		require.JSONEq(t, `{"app":"plain"}`, got[none.ID])
		after, err := st.TaskGet(ctx, u.TeamIDs(), split.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"app":"shop","pw":"[REDACTED]"}`, string(after.Params), "claiming changes nothing stored")
	})
}
