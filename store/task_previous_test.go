package store_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// TestTaskPreviousDeploy: what a deploy replaces is the last deploy of the
// same pipeline and target that completed before it started; failed
// deploys, other targets, other pipelines and other teams do not count.
func TestTaskPreviousDeploy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "prev@acme.test", "acme", auth.RoleDeployer)
	other := testfactory.User(t, st, "prev@beta.test", "beta", auth.RoleDeployer)
	// the target is app and env, its key their JSON as pipeline.TargetKey makes it
	deploy := func(u *auth.User, pipeline, params string, end task.State) *task.Task {
		var p struct{ App, Env string }
		require.NoError(t, json.Unmarshal([]byte(params), &p))
		key := fmt.Sprintf(`{"app":%q,"env":%q}`, p.App, p.Env)
		tk, _, err := st.TaskInsert(ctx, store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Kind: task.KindDeploy,
			Pipeline: pipeline, Params: json.RawMessage(params), Priority: task.PriorityNormal, TargetKey: key})
		require.NoError(t, err)
		if end == "" {
			return tk
		}
		claimed := claimIDs(t, st, "w")
		require.Contains(t, claimed, tk.ID)
		_, err = st.TaskWrites(ctx, []store.TaskWrite{{ID: tk.ID, Token: claimed[tk.ID], State: end, Release: true}})
		require.NoError(t, err)
		got, err := st.TaskGet(ctx, u.TeamIDs(), tk.ID)
		require.NoError(t, err)
		return got
	}
	v1 := deploy(u, "web", `{"app":"shop","env":"staging","version":"1"}`, task.StateCompleted)
	v2 := deploy(u, "web", `{"app":"shop","env":"staging","version":"2"}`, task.StateCompleted)
	deploy(u, "web", `{"app":"shop","env":"production","version":"9"}`, task.StateCompleted)
	deploy(u, "api", `{"app":"shop","env":"staging","version":"8"}`, task.StateCompleted)
	deploy(u, "web", `{"app":"shop","env":"staging","version":"3"}`, task.StateFailed)
	deploy(other, "web", `{"app":"shop","env":"staging","version":"7"}`, task.StateCompleted)
	v4 := deploy(u, "web", `{"app":"shop","env":"staging","version":"4"}`, "")
	target := `{"app":"shop","env":"staging"}`
	team := u.Memberships[0].TeamID

	prev, err := st.TaskPreviousDeploy(ctx, team, "web", target, v4.ID, time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, v2.ID, prev.TaskID)
	require.JSONEq(t, `{"app":"shop","env":"staging","version":"2"}`, string(prev.Params))

	prev, err = st.TaskPreviousDeploy(ctx, team, "web", target, v4.ID, *v2.FinishedAt)
	require.NoError(t, err)
	require.Equal(t, v1.ID, prev.TaskID, "what was there before v2 finished")

	prev, err = st.TaskPreviousDeploy(ctx, team, "web", target, v2.ID, v2.FinishedAt.Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, v1.ID, prev.TaskID, "a deploy does not replace itself")

	_, err = st.TaskPreviousDeploy(ctx, team, "web", target, v1.ID, *v1.FinishedAt)
	require.ErrorIs(t, err, store.ErrNotFound, "the first deploy replaces nothing")
	_, err = st.TaskPreviousDeploy(ctx, team, "web", `{"app":"cart","env":"staging"}`, v4.ID, time.Now())
	require.ErrorIs(t, err, store.ErrNotFound)

	// Many at once, as the approvals inbox asks: each answer is the one
	// asked alone, in the order asked; an id that is no uuid replaces
	// nothing and spoils no other answer.
	q := func(taskID, targetKey string, before time.Time) store.PreviousDeployQuery {
		return store.PreviousDeployQuery{TeamID: team, Pipeline: "web", TargetKey: targetKey, TaskID: taskID, Before: before}
	}
	prevs, err := st.TaskPreviousDeploys(ctx, []store.PreviousDeployQuery{
		q(v4.ID, target, time.Now().Add(time.Minute)),
		q(v1.ID, target, *v1.FinishedAt),
		q(v4.ID, target, *v2.FinishedAt),
		q("not-a-task", target, time.Now()),
		q(v4.ID, `{"app":"cart","env":"staging"}`, time.Now()),
		q(v2.ID, target, v2.FinishedAt.Add(time.Second)),
	})
	require.NoError(t, err)
	require.Len(t, prevs, 6)
	got := make([]string, len(prevs))
	for i, p := range prevs {
		if p != nil {
			got[i] = p.TaskID
		}
	}
	require.Equal(t, []string{v2.ID, "", v1.ID, "", "", v1.ID}, got)
	require.JSONEq(t, `{"app":"shop","env":"staging","version":"2"}`, string(prevs[0].Params))
	require.Equal(t, *v2.FinishedAt, prevs[0].FinishedAt)

	prevs, err = st.TaskPreviousDeploys(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, prevs)
}
