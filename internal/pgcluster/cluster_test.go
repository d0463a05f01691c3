package pgcluster

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// testDir is a temporary data folder; its cluster is stopped and removed
// when the test ends.
func testDir(t *testing.T) string {
	t.Helper()
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
	return dir
}

// TestEnsure starts a real private cluster in a temporary folder: init,
// reuse, concurrent callers, stop and restart; it is durable and closed to
// anyone without the generated password.
func TestEnsure(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := testDir(t)

	dbURL, err := Ensure(ctx, Options{Dir: dir, Database: "app"})
	require.NoError(t, err)
	query(t, dbURL)
	requireClosed(t, dir, dbURL)
	requireDurable(t, dbURL, true)

	again, err := Ensure(ctx, Options{Dir: dir, Database: "app"})
	require.NoError(t, err)
	require.Equal(t, dbURL, again, "a running cluster is reused")

	var wg sync.WaitGroup
	urls := make([]string, 4)
	errs := make([]error, 4)
	for i := range urls {
		wg.Go(func() { urls[i], errs[i] = Ensure(ctx, Options{Dir: dir, Database: "app"}) })
	}
	wg.Wait()
	for i := range urls {
		require.NoError(t, errs[i])
		require.Equal(t, dbURL, urls[i])
	}

	require.NoError(t, Stop(ctx, dir))
	require.NoError(t, Stop(ctx, dir), "stopping a stopped cluster is fine")
	restarted, err := Ensure(ctx, Options{Dir: dir, Database: "app"})
	require.NoError(t, err)
	require.Equal(t, dbURL, restarted, "the same password after a restart")
	query(t, restarted)
}

// TestEnsureDurabilityOffOnlyWhenAsked: the test suite may start its own
// cluster without fsync; a durable request restarts such a cluster durable,
// and a running durable cluster is never switched off.
func TestEnsureDurabilityOffOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := testDir(t)
	fast, err := Ensure(ctx, Options{Dir: dir, DurabilityOff: true})
	require.NoError(t, err)
	requireDurable(t, fast, false)
	requireClosed(t, dir, fast)

	durable, err := Ensure(ctx, Options{Dir: dir})
	require.NoError(t, err)
	requireDurable(t, durable, true)

	again, err := Ensure(ctx, Options{Dir: dir, DurabilityOff: true})
	require.NoError(t, err)
	requireDurable(t, again, true)
}

// TestEnsureUpgradesATrustCluster: a cluster made by an older flightdeck
// (trust authentication, durability off, no password file) is upgraded on
// start: a password is set and kept, pg_hba.conf no longer trusts anyone,
// and it runs durable.
func TestEnsureUpgradesATrustCluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := testDir(t)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	bin, err := binaries(ctx, nil)
	require.NoError(t, err)
	dataDir := filepath.Join(dir, "pg")
	require.NoError(t, os.MkdirAll(dataDir, 0o700))
	require.NoError(t, chownToPostgres(dataDir))
	require.NoError(t, runAsOwner(ctx, filepath.Join(bin, "initdb"), "-D", dataDir, "--auth=trust", "-U", "postgres", "-E", "UTF8", "--no-sync"))
	port, err := freePort()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pg.port"), []byte(strconv.Itoa(port)+"\n"), 0o644))
	old := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off "+
		"-c synchronous_commit=off -c full_page_writes=off", port)
	require.NoError(t, runAsOwner(ctx, filepath.Join(bin, "pg_ctl"), "-D", dataDir, "-l", filepath.Join(dataDir, "server.log"), "-o", old, "-w", "start"))
	trusting := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	query(t, trusting)

	dbURL, err := Ensure(ctx, Options{Dir: dir})
	require.NoError(t, err)
	query(t, dbURL)
	requireClosed(t, dir, dbURL)
	requireDurable(t, dbURL, true)

	// Stopped and started again, the upgraded cluster keeps its password.
	require.NoError(t, Stop(ctx, dir))
	again, err := Ensure(ctx, Options{Dir: dir})
	require.NoError(t, err)
	require.Equal(t, dbURL, again)
	query(t, again)
}

// requireClosed: the URL carries the password of the 0600 file under dir,
// nothing in pg_hba.conf trusts, and a connection without the password is
// refused.
func requireClosed(t *testing.T, dir, dbURL string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	pw, ok := u.User.Password()
	require.True(t, ok, "the URL carries the password")
	fi, err := os.Stat(filepath.Join(dir, "pg.password"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	b, err := os.ReadFile(filepath.Join(dir, "pg.password"))
	require.NoError(t, err)
	require.Equal(t, pw, strings.TrimSpace(string(b)))
	require.GreaterOrEqual(t, len(pw), 32)

	hba, err := os.ReadFile(filepath.Join(dir, "pg", "pg_hba.conf"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(hba), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			require.NotContains(t, f, "trust", line)
		}
	}
	for _, bad := range []*url.Userinfo{url.User("postgres"), url.UserPassword("postgres", "wrong-password")} {
		u2 := *u
		u2.User = bad
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		c, err := pgx.Connect(ctx, u2.String())
		cancel()
		if err == nil {
			_ = c.Close(context.Background())
		}
		require.Error(t, err, "no way in without the password")
	}
}

func requireDurable(t *testing.T, dbURL string, on bool) {
	t.Helper()
	c, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer c.Close(context.Background())
	want := map[bool]string{true: "on", false: "off"}[on]
	for _, name := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
		var v string
		require.NoError(t, c.QueryRow(t.Context(), "SELECT current_setting($1)", name).Scan(&v))
		require.Equal(t, want, v, name)
	}
}

func query(t *testing.T, dbURL string) {
	t.Helper()
	c, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer c.Close(context.Background())
	var one int
	require.NoError(t, c.QueryRow(t.Context(), "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
}
