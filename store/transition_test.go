package store_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/workflow/task"
)

// The database's copy of the transition rule is task.CanTransition's, for
// every pair of states.
func TestDatabaseTransitionRuleIsTheTaskPackages(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	var states []string
	for _, s := range task.States {
		states = append(states, string(s))
	}
	type pair struct {
		From, To string
		OK       bool
	}
	rows, err := st.Pool().Query(t.Context(), `
		SELECT f, t, flightdeck_transition_ok(f, t) FROM unnest($1::text[]) f, unnest($1::text[]) t`, states)
	require.NoError(t, err)
	pairs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[pair])
	require.NoError(t, err)
	for _, p := range pairs {
		require.Equal(t, task.CanTransition(task.State(p.From), task.State(p.To)), p.OK, "%s -> %s", p.From, p.To)
	}
	n := len(pairs)
	require.Equal(t, len(states)*len(states), n)
}

// A write that changes a task's state against the rule is refused by the
// database, whatever statement makes it; an allowed one goes through.
func TestDatabaseRefusesForbiddenTransitions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "rule@acme.test", "acme", auth.RoleDeployer)
	tk := testfactory.Task(t, st, u, nil)

	_, err := st.Pool().Exec(ctx, `UPDATE tasks SET state = 'needs_attention' WHERE id = $1`, tk.ID)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "pending -> needs_attention: %v", err)
	require.Equal(t, "task_transition", pgErr.ConstraintName)
	require.Contains(t, pgErr.Message, "a pending task cannot become needs_attention")

	testfactory.Completed(t, st, tk.ID)
	_, err = st.Pool().Exec(ctx, `UPDATE tasks SET state = 'running' WHERE id = $1`, tk.ID)
	require.ErrorContains(t, err, "a completed task cannot become running")

	// No setting lets a statement past the rule (the fixtures' old way
	// around it, gone in migration 00081).
	tx, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = tx.Exec(ctx, `SELECT set_config('flightdeck.fixture', 'on', true)`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE tasks SET state = 'running' WHERE id = $1`, tk.ID)
	require.ErrorContains(t, err, "a completed task cannot become running")
	require.NoError(t, tx.Rollback(ctx))

	// Unchanged states and allowed changes pass.
	tk2 := testfactory.Task(t, st, u, nil)
	_, err = st.Pool().Exec(ctx, `UPDATE tasks SET state = state, priority = 1 WHERE id = $1`, tk2.ID)
	require.NoError(t, err)
	_, err = st.Pool().Exec(ctx, `UPDATE tasks SET state = 'cancelled', finished_at = now() WHERE id = $1`, tk2.ID)
	require.NoError(t, err)
}

// The partial indexes on tasks name states in their predicates, fixed by
// the migrations that made them; the statements meant to use them write
// task.TerminalStates or task.ClaimableStates in. Each "not ended" predicate
// lists exactly the terminal states and the claim's index the claimable
// ones, so a state added to a set without a migration for its indexes fails
// here, not as a slow plan.
func TestStateListsMatchIndexes(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	type index struct{ Name, Def string }
	rows, err := st.Pool().Query(t.Context(), `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'tasks' AND indexdef LIKE '%ARRAY[%'`)
	require.NoError(t, err)
	indexes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[index])
	require.NoError(t, err)
	quoted := regexp.MustCompile(`'([a-z_]+)'::text`)
	checked := map[string]bool{}
	for _, ix := range indexes {
		var named []task.State
		for _, m := range quoted.FindAllStringSubmatch(ix.Def[strings.Index(ix.Def, "ARRAY["):], -1) {
			named = append(named, task.State(m[1]))
		}
		switch {
		case strings.Contains(ix.Def, "<> ALL (ARRAY["):
			require.Equal(t, task.TerminalStates, named, "index %s: its tasks not ended", ix.Name)
			checked["terminal"] = true
		case ix.Name == "tasks_claim_idx":
			require.Equal(t, task.ClaimableStates, named, "index %s", ix.Name)
			checked["claimable"] = true
		}
	}
	require.True(t, checked["terminal"] && checked["claimable"], "indexes seen: %v", indexes)
}
