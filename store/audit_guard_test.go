package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
)

// The audit log is append-only for the role the app connects as: an
// UPDATE, a DELETE or a TRUNCATE is refused by the database itself
// (migration 00070); an entry goes only with its team. Before, the app
// role could rewrite or erase its own audit trail.
func TestAuditLogIsAppendOnly(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	ctx := t.Context()
	u := testfactory.User(t, st, "ann@acme.test", "acme", auth.RoleAdmin)
	teamID := u.TeamIDs()[0]
	require.NoError(t, st.AuditAdd(ctx, teamID, "ann@acme.test", "freeze.created", "", map[string]any{"reason": "x"}))
	for _, stmt := range []string{
		`UPDATE audit_log SET actor = 'someone else'`,
		`DELETE FROM audit_log WHERE actor = 'ann@acme.test'`,
		`TRUNCATE audit_log`,
	} {
		_, err := st.Pool().Exec(ctx, stmt)
		require.ErrorContains(t, err, "append-only", stmt)
	}
	var n int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE actor = 'ann@acme.test'`).Scan(&n))
	require.Equal(t, 1, n)

	_, err := st.Pool().Exec(ctx, `DELETE FROM teams WHERE id = $1`, teamID)
	require.NoError(t, err, "entries go with their team")
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE actor = 'ann@acme.test'`).Scan(&n))
	require.Zero(t, n)
}
