package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/dbtest"
	"flightdeck/migrations"
	"flightdeck/store"
)

func TestMigrateTwiceInParallel(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := unmigratedDatabase(t)

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool, err := pgxpool.New(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer pool.Close()
			errs[i] = store.New(pool).Migrate(ctx, nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}

	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	files, err := fs.Glob(migrations.FS, "*.sql")
	require.NoError(t, err)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&n))
	require.Equal(t, len(files), n, "each migration applied exactly once")
	require.NoError(t, store.New(pool).Migrate(ctx, nil), "a second run is a no-op")
}

// unmigratedDatabase creates an empty database of its own, dropped when the
// test ends, for tests that run the migrations themselves.
func unmigratedDatabase(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "fd_migrate_" + hex.EncodeToString(b)
	url, err := store.RecreateDatabase(t.Context(), dbtest.BaseURL(t), name)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = store.DropDatabase(ctx, dbtest.BaseURL(t), name)
	})
	return url
}
