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
	requireLeastPrivilege(t, dbURL, false)
	testSuite, err := Ensure(ctx, Options{Dir: dir, Database: "app", CreateDB: true})
	require.NoError(t, err)
	requireLeastPrivilege(t, testSuite, true)
	admin, err := Ensure(ctx, Options{Dir: dir, Database: "app", Admin: true})
	require.NoError(t, err)
	u, err := url.Parse(admin)
	require.NoError(t, err)
	require.Equal(t, "postgres", u.User.Username(), "the benchmarks' URL")
	dbURL, err = Ensure(ctx, Options{Dir: dir, Database: "app"})
	require.NoError(t, err)
	requireLeastPrivilege(t, dbURL, false)

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
	// An older flightdeck migrated its database as the superuser.
	c, err := pgx.Connect(ctx, trusting)
	require.NoError(t, err)
	_, err = c.Exec(ctx, `CREATE DATABASE flightdeck`)
	require.NoError(t, err)
	require.NoError(t, c.Close(ctx))
	c, err = pgx.Connect(ctx, strings.Replace(trusting, "/postgres?", "/flightdeck?", 1))
	require.NoError(t, err)
	_, err = c.Exec(ctx, `CREATE TYPE mood AS ENUM ('ok', 'bad');
		CREATE TABLE tasks (id bigserial PRIMARY KEY, mood mood NOT NULL DEFAULT 'ok');
		CREATE SEQUENCE loose_seq;
		CREATE VIEW task_ids AS SELECT id FROM tasks;
		CREATE FUNCTION task_count() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM tasks';`)
	require.NoError(t, err)
	require.NoError(t, c.Close(ctx))

	dbURL, err := Ensure(ctx, Options{Dir: dir})
	require.NoError(t, err)
	query(t, dbURL)
	requireClosed(t, dir, dbURL)
	requireDurable(t, dbURL, true)
	requireLeastPrivilege(t, dbURL, false)
	app, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer app.Close(context.Background())
	var n int64
	require.NoError(t, app.QueryRow(ctx, `INSERT INTO tasks DEFAULT VALUES RETURNING nextval('loose_seq') + task_count()`).Scan(&n),
		"the app role owns what the superuser made")
	_, err = app.Exec(ctx, `ALTER TABLE tasks ADD COLUMN note text; ALTER TYPE mood ADD VALUE 'meh'; CREATE OR REPLACE VIEW task_ids AS SELECT id FROM tasks`)
	require.NoError(t, err, "and can migrate it")
	var others int
	require.NoError(t, app.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relowner <> r.oid) +
		(SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' AND p.proowner <> r.oid) +
		(SELECT count(*) FROM pg_type y JOIN pg_namespace n ON n.oid = y.typnamespace WHERE n.nspname = 'public' AND y.typowner <> r.oid)
		FROM pg_roles r WHERE r.rolname = current_user`).Scan(&others))
	require.Zero(t, others, "nothing left to another role")

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
	require.Equal(t, AppRole, u.User.Username(), "the app role, not the superuser")
	pw, ok := u.User.Password()
	require.True(t, ok, "the URL carries the password")
	for _, f := range []string{"pg.password", "pg.app-password"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pg.app-password"))
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
	for _, bad := range []*url.Userinfo{url.User("postgres"), url.UserPassword("postgres", "wrong-password"),
		url.User(AppRole), url.UserPassword(AppRole, "wrong-password")} {
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

// requireLeastPrivilege: the URL's role is no superuser, creates no roles
// (nor databases, but for the test suite's cluster), is a member of no
// predefined role (pg_read_server_files…), and owns its database.
func requireLeastPrivilege(t *testing.T, dbURL string, createDB bool) {
	t.Helper()
	c, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer c.Close(context.Background())
	var super, createRole, canCreateDB, owner bool
	var memberships int
	require.NoError(t, c.QueryRow(t.Context(), `SELECT r.rolsuper, r.rolcreaterole, r.rolcreatedb,
			(SELECT count(*) FROM pg_auth_members m WHERE m.member = r.oid),
			(SELECT d.datdba = r.oid FROM pg_database d WHERE d.datname = current_database())
		FROM pg_roles r WHERE r.rolname = current_user`).Scan(&super, &createRole, &canCreateDB, &memberships, &owner))
	require.False(t, super, "superuser")
	require.False(t, createRole, "createrole")
	require.Equal(t, createDB, canCreateDB, "createdb")
	require.Zero(t, memberships, "member of a role")
	require.True(t, owner, "owns its database")
	_, err = c.Exec(t.Context(), `SELECT pg_read_file('PG_VERSION')`)
	require.Error(t, err, "reads no server files")
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
