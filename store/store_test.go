package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/dbtest"
	"flightdeck/store"
)

// The web requests' pool has the database cut off a slow statement (a
// request that gave up must not leave its query running); the workers'
// pool does not.
func TestOpenRequestsBoundsStatements(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := dbtest.DB(t).Config().ConnString()

	web, err := store.OpenRequests(ctx, url, 2, 100*time.Millisecond)
	require.NoError(t, err)
	defer web.Close()
	_, err = web.Exec(ctx, `SELECT pg_sleep(0.3)`)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "got %v", err)
	require.Equal(t, "57014", pgErr.Code, "query_canceled by statement_timeout")
	require.NoError(t, store.New(web).Ping(ctx), "the connection stays usable")

	workers, err := store.Open(ctx, url, 2)
	require.NoError(t, err)
	defer workers.Close()
	_, err = workers.Exec(ctx, `SELECT pg_sleep(0.3)`)
	require.NoError(t, err)
}
