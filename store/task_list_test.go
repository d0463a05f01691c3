package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// TaskList reads each team and state apart and merges them: paged through,
// it gives exactly what one sorted scan of the teams' tasks gives, ties in
// created_at broken by id, with every filter.
func TestTaskListMergesTeamsAndStates(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	a := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	b := testfactory.User(t, st, "b@beta.test", "beta", auth.RoleDeployer)
	other := testfactory.User(t, st, "c@other.test", "other", auth.RoleDeployer)
	for i := range 40 {
		u := []*auth.User{a, b, other}[i%3]
		pl := []string{"noop", "deploy-web"}[i%2]
		_, _, err := st.TaskInsert(ctx, store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID, Kind: task.KindDeploy,
			Pipeline: pl, Priority: task.PriorityNormal, RequestHash: []byte{byte(i)}})
		require.NoError(t, err)
	}
	// States spread over all of them; times in pairs, so ids break ties.
	testfactory.Fixture(t, st.Pool(), `
		WITH n AS (SELECT id, row_number() OVER (ORDER BY request_hash) AS i FROM tasks) -- the insert order: ids made in one millisecond are not
		UPDATE tasks t SET state = ($1::text[])[1 + n.i % 10], created_at = '2026-01-01'::timestamptz + make_interval(secs => (n.i / 2)::int),
			priority = 1 + n.i % 4,
			finished_at = CASE WHEN ($1::text[])[1 + n.i % 10] IN ('completed', 'failed', 'cancelled')
				THEN '2026-01-01'::timestamptz + make_interval(secs => 60 - n.i::int) END
		FROM n WHERE n.id = t.id`, func() []string {
		var s []string
		for _, x := range task.States {
			s = append(s, string(x))
		}
		return s
	}())
	teams := append(a.TeamIDs(), b.TeamIDs()...)
	at := func(sec int) time.Time { return time.Date(2026, 1, 1, 0, 0, sec, 0, time.UTC) }

	for _, p := range []store.TaskListParams{
		{},
		{State: "completed"},
		{Pipeline: "noop"},
		{CreatedBy: "b@beta.test"},
		{Kind: "deploy", State: "pending"},
		{Priority: task.PriorityHigh},
		{FinishedAfter: at(40)},
		{FinishedBefore: at(35)},
		{FinishedAfter: at(30), FinishedBefore: at(50), State: "completed"},
	} {
		want := dbtest.Strings(t, st.Pool(), `
			SELECT t.id::text FROM tasks t JOIN users u ON u.id = t.created_by
			WHERE t.team_id = ANY($1) AND ($2 = '' OR t.state = $2) AND ($3 = '' OR t.pipeline = $3)
				AND ($4 = '' OR u.email = $4) AND ($5 = '' OR t.kind = $5) AND ($6 = 0 OR t.priority = $6)
				AND ($7::timestamptz IS NULL OR t.finished_at >= $7) AND ($8::timestamptz IS NULL OR t.finished_at < $8)
			ORDER BY t.created_at DESC, t.id DESC`, teams, p.State, p.Pipeline, p.CreatedBy, p.Kind, int16(p.Priority),
			nullTime(p.FinishedAfter), nullTime(p.FinishedBefore))
		require.NotEmpty(t, want)

		got := []string{}
		p.TeamIDs, p.Limit = append(teams, teams[0]), 3 // a repeated team is read once
		for pages := 0; ; pages++ {
			require.Less(t, pages, 40)
			list, next, err := st.TaskList(ctx, p)
			require.NoError(t, err)
			for _, tk := range list {
				got = append(got, tk.ID)
			}
			if next == "" {
				break
			}
			p.Before = next
		}
		require.Equal(t, want, got, "%+v", p)
	}
}

// nullTime is nil for the zero time (no bound).
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// TestTaskListNeedsNoRollups: a list with a finished window finds its
// tasks in the tasks alone. A task the fold has not counted yet (the
// rollups lag, or were lost) is listed all the same; before, the scan
// started at the rollups' created_min and hid it.
func TestTaskListNeedsNoRollups(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	tk := testfactory.Task(t, st, u, nil)
	testfactory.Completed(t, st, tk.ID)
	// whatever the rollups say (nothing, here), the list reads the tasks
	testfactory.Fixture(t, st.Pool(), `DELETE FROM task_rollups WHERE team_id = $1`, u.Memberships[0].TeamID)
	list, _, err := st.TaskList(ctx, store.TaskListParams{TeamIDs: u.TeamIDs(), FinishedAfter: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, tk.ID, list[0].ID)
}
