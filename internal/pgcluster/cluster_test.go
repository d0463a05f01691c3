package pgcluster

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestEnsure starts a real private cluster in a temporary folder: init,
// reuse, concurrent callers, stop and restart.
func TestEnsure(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	base, err := os.MkdirTemp("", "pgcluster-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(base, 0o755)) // postgres must traverse it when we are root
	dir := filepath.Join(base, "data")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = Stop(ctx, dir)
		_ = os.RemoveAll(base)
	})

	url, err := Ensure(ctx, Options{Dir: dir, Database: "app"})
	require.NoError(t, err)
	query(t, url)

	again, err := Ensure(ctx, Options{Dir: dir, Database: "app"})
	require.NoError(t, err)
	require.Equal(t, url, again, "a running cluster is reused")

	var wg sync.WaitGroup
	urls := make([]string, 4)
	errs := make([]error, 4)
	for i := range urls {
		wg.Go(func() { urls[i], errs[i] = Ensure(ctx, Options{Dir: dir, Database: "app"}) })
	}
	wg.Wait()
	for i := range urls {
		require.NoError(t, errs[i])
		require.Equal(t, url, urls[i])
	}

	require.NoError(t, Stop(ctx, dir))
	require.NoError(t, Stop(ctx, dir), "stopping a stopped cluster is fine")
	restarted, err := Ensure(ctx, Options{Dir: dir, Database: "app"})
	require.NoError(t, err)
	query(t, restarted)
}

func query(t *testing.T, url string) {
	t.Helper()
	c, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer c.Close(context.Background())
	var one int
	require.NoError(t, c.QueryRow(t.Context(), "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
}
