package store_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// TestEnvironmentList: a target's running task is the first one past its
// claim, its waiting ones are counted and the first five listed in the
// order they will run; and the statement reads what runs and waits once
// per target, not once for the count and again for the list.
func TestEnvironmentList(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.DB(t)
	st := store.New(pool)
	traced, rec := dbtest.Traced(t, pool)
	u := testfactory.User(t, st, "env@acme.test", "acme", auth.RoleDeployer)
	team := u.Memberships[0].TeamID
	const shop, cart = `{"app":"shop","env":"staging"}`, `{"app":"cart","env":"staging"}`
	insert := func(target, version string, prio task.Priority) string {
		tk, _, err := st.TaskInsert(ctx, store.TaskInsertParams{TeamID: team, CreatedByID: u.ID, Kind: task.KindDeploy,
			Pipeline: "web", Params: json.RawMessage(`{"version":"` + version + `"}`), Priority: prio, TargetKey: target})
		require.NoError(t, err)
		return tk.ID
	}
	done := insert(cart, "1", task.PriorityNormal)
	claimed := claimIDs(t, st, "w")
	_, err := st.TaskWrites(ctx, []store.TaskWrite{{ID: done, Token: claimed[done], State: task.StateCompleted, Release: true}})
	require.NoError(t, err)
	running := insert(shop, "2", task.PriorityNormal)
	require.Contains(t, claimIDs(t, st, "w"), running)
	low := insert(shop, "3", task.PriorityLow)
	var normal []string
	for _, v := range []string{"4", "5", "6", "7", "8"} {
		normal = append(normal, insert(shop, v, task.PriorityNormal))
	}
	hotfix := insert(shop, "9", task.PriorityHotfix)

	envs, err := st.WithPool(traced).EnvironmentList(ctx, store.EnvironmentListParams{TeamIDs: []string{team}, History: 3})
	require.NoError(t, err)
	require.Len(t, envs, 2)
	c, s := envs[0], envs[1]
	require.Equal(t, cart, c.TargetKey)
	require.Nil(t, c.Running)
	require.Zero(t, c.Waiting)
	require.Empty(t, c.WaitingIDs)
	require.Equal(t, done, c.Current.TaskID)
	require.Len(t, c.History, 1)

	require.Equal(t, shop, s.TargetKey)
	require.NotNil(t, s.Running)
	require.Equal(t, running, *s.Running)
	require.Equal(t, 7, s.Waiting)
	require.Equal(t, append([]string{hotfix}, normal[:4]...), s.WaitingIDs, "by priority, then age; five of them")
	require.Nil(t, s.Current)
	require.NotContains(t, s.WaitingIDs, low)

	// One statement, whose plan reads tasks four times: the current and
	// previous deploys, the history, and once what runs and waits.
	sent := rec.Take()
	require.Len(t, sent, 1)
	var plan []struct{ Plan planNode }
	require.NoError(t, pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sent[0].SQL, sent[0].Args...).Scan(&plan))
	require.Len(t, plan, 1)
	require.Equal(t, 4, plan[0].Plan.reads("tasks"), "reads of tasks in the plan")
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	Relation string     `json:"Relation Name"`
	Plans    []planNode `json:"Plans"`
}

// reads counts the nodes of the plan that scan relation.
func (n planNode) reads(relation string) int {
	c := 0
	if n.Relation == relation {
		c++
	}
	for _, p := range n.Plans {
		c += p.reads(relation)
	}
	return c
}

// TestEnvironmentCurrentAndPrevious: what is deployed where is read from
// the tasks, not kept beside them: current is the target's last completed
// deploy, previous the last one before it whose params differ (redeploying
// what runs keeps the version to roll back to); a failed deploy moves
// neither.
func TestEnvironmentCurrentAndPrevious(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "env@acme.test", "acme", auth.RoleDeployer)
	team := u.Memberships[0].TeamID
	const target = `{"app":"shop","env":"prod"}`
	deploy := func(version string, s task.State) string {
		tk, _, err := st.TaskInsert(ctx, store.TaskInsertParams{TeamID: team, CreatedByID: u.ID, Kind: task.KindDeploy,
			Pipeline: "web", Params: json.RawMessage(`{"version":"` + version + `"}`), Priority: task.PriorityNormal, TargetKey: target})
		require.NoError(t, err)
		claimed := claimIDs(t, st, "w")
		typ, status := task.TerminalEvent(s)
		_, err = st.TaskWrites(ctx, []store.TaskWrite{{ID: tk.ID, Token: claimed[tk.ID], State: s, Release: true,
			Events: []task.Event{{Type: typ, Status: status, Message: string(s)}}}})
		require.NoError(t, err)
		return tk.ID
	}
	current := func() (cur, prev string) {
		envs, err := st.EnvironmentList(ctx, store.EnvironmentListParams{TeamIDs: []string{team}})
		require.NoError(t, err)
		require.Len(t, envs, 1)
		if envs[0].Current != nil {
			cur = envs[0].Current.TaskID
		}
		if envs[0].Previous != nil {
			prev = envs[0].Previous.TaskID
		}
		return cur, prev
	}
	v1 := deploy("1", task.StateCompleted)
	cur, prev := current()
	require.Equal(t, v1, cur)
	require.Empty(t, prev)
	deploy("2", task.StateCompleted)
	again := deploy("2", task.StateCompleted)
	cur, prev = current()
	require.Equal(t, again, cur)
	require.Equal(t, v1, prev, "redeploying what runs keeps the version to roll back to")
	deploy("3", task.StateFailed)
	cur, prev = current()
	require.Equal(t, again, cur, "only completed deploys move a target on")
	require.Equal(t, v1, prev)
	back := deploy("1", task.StateCompleted)
	cur, prev = current()
	require.Equal(t, back, cur)
	require.Equal(t, again, prev)
}
