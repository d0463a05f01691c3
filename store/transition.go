package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"flightdeck/workflow/task"
)

// The database refuses a task state change that task.CanTransition does
// not allow, whichever statement makes it (migration 00026's trigger). The
// rule it checks is written here from the task package's table, so it is
// defined once, in Go, and kept by every write.

// TransitionRule is the body of flightdeck_transition_ok as Migrate writes
// it: the allowed changes as one constant array. Test templates hash it
// with the migrations, so a changed rule makes a new template.
func TransitionRule() string {
	pairs := make([]string, 0, 64)
	for _, p := range task.Transitions() {
		pairs = append(pairs, string(p[0])+">"+string(p[1]))
	}
	return "SELECT from_state || '>' || to_state = ANY ('{" + strings.Join(pairs, ",") + "}'::text[])"
}

// syncTransitionRule writes TransitionRule into the database when its copy
// differs, under the migrations' lock, so processes starting together do
// not replace it at once.
func (s *Store) syncTransitionRule(ctx context.Context) error {
	rule := TransitionRule()
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockID)); err != nil {
			return interpretError(err)
		}
		var current string
		err := tx.QueryRow(ctx, `SELECT prosrc FROM pg_proc WHERE proname = 'flightdeck_transition_ok'`).Scan(&current)
		if err != nil {
			return interpretError(err)
		}
		if strings.TrimSpace(current) == rule {
			return nil
		}
		// The rule is made of the task package's state names only, so it
		// can be part of the statement's text.
		_, err = tx.Exec(ctx, `CREATE OR REPLACE FUNCTION flightdeck_transition_ok(from_state text, to_state text)
			RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ `+rule+` $$`)
		return interpretError(err)
	})
	if err != nil {
		return fmt.Errorf("error writing the task transition rule: %w", err)
	}
	return nil
}

// terminalStates and claimableStates are task.TerminalStates and
// task.ClaimableStates as SQL lists ("('completed', 'failed', 'cancelled')"),
// written into statements as literals, not parameters: the planner matches
// a statement to a partial index only when its predicate names the same
// constants. TestStateListsMatchIndexes checks the indexes' predicates
// (fixed by their migrations) against these lists.
var (
	terminalStates  = sqlStates(task.TerminalStates)
	claimableStates = sqlStates(task.ClaimableStates)
)

func sqlStates(ss []task.State) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "'" + string(s) + "'"
	}
	return "(" + strings.Join(q, ", ") + ")"
}
