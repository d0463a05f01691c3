// Package dbtest gives tests real PostgreSQL databases (test-only).
//
// DB/URL clone a fresh database per test from a template that has every
// migration applied. The template is keyed by a hash of the migration files
// and of the schema Migrate makes from Go, so a changed migration builds a
// new template and a stale one is never used.
// Cloning a template takes tens of milliseconds, so every test that commits,
// uses several connections, LISTEN/NOTIFY or subprocesses gets its own
// database and runs in parallel with the others. Tx hands out a transaction
// on a shared database that is rolled back when the test ends, for query
// tests that need no commit.
//
// The server comes from TEST_DATABASE_URL (set by `go tool task test`); a
// missing URL fails the test with a hint rather than skipping it.
package dbtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	neturl "net/url"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"flightdeck/migrations"
	"flightdeck/store"
)

// EnvURL names the variable holding the test server's URL.
const EnvURL = "TEST_DATABASE_URL"

var (
	templateOnce sync.Once
	templateName string
	templateErr  error

	sharedOnce sync.Once
	sharedPool *pgxpool.Pool
	sharedErr  error
)

// BaseURL returns the server URL or fails the test with a hint.
func BaseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		t.Fatalf("%s is not set: run the tests with `go tool task test` (it starts the embedded PostgreSQL), "+
			"or export %s=postgres://user@host:port/db", EnvURL, EnvURL)
	}
	return u
}

// URL creates a fresh migrated database for this test and returns its URL.
// The database is dropped when the test ends.
func URL(t testing.TB) string {
	t.Helper()
	base := BaseURL(t)
	tpl := ensureTemplate(t, base)
	name := "fd_test_" + randHex(8)
	admin := connect(t, base)
	defer admin.Close(context.Background())
	if _, err := admin.Exec(t.Context(), fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, tpl)); err != nil {
		t.Fatalf("error creating test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
	})
	return withDatabase(t, base, name)
}

// DB returns a pool on a fresh migrated database for this test.
func DB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	// store.Open: the pool the server uses, with its type registrations.
	pool, err := store.Open(t.Context(), URL(t), 0)
	if err != nil {
		t.Fatalf("error opening test pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Strings runs a query of one text column on q (a pool, a connection or a
// transaction) and returns its values in order.
func Strings(t testing.TB, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, sql string, args ...any) []string {
	t.Helper()
	rows, err := q.Query(t.Context(), sql, args...)
	if err != nil {
		t.Fatalf("error querying: %v", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("error reading rows: %v", err)
	}
	return out
}

// Store returns a store on a fresh migrated database for this test.
func Store(t testing.TB) *store.Store {
	t.Helper()
	return store.New(DB(t))
}

// Tx returns a transaction on a database shared by the package's tests; it
// is rolled back when the test ends, so nothing it writes is seen by others.
func Tx(t testing.TB) pgx.Tx {
	t.Helper()
	sharedOnce.Do(func() {
		// The shared database outlives any one test, so it is not dropped in
		// a test cleanup; it is named per process and dropped by the next
		// template rebuild at the latest.
		base := BaseURL(t)
		tpl := ensureTemplate(t, base)
		name := "fd_shared_" + randHex(8)
		admin := connect(t, base)
		defer admin.Close(context.Background())
		if _, err := admin.Exec(context.Background(), fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, tpl)); err != nil {
			sharedErr = err
			return
		}
		sharedPool, sharedErr = store.Open(context.Background(), withDatabase(t, base, name), 0)
	})
	if sharedErr != nil {
		t.Fatalf("error preparing shared test database: %v", sharedErr)
	}
	tx, err := sharedPool.Begin(t.Context())
	if err != nil {
		t.Fatalf("error beginning test transaction: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// ensureTemplate builds the migrated template database once per migrations
// hash. An advisory lock makes concurrent test binaries wait for one builder.
func ensureTemplate(t testing.TB, base string) string {
	t.Helper()
	templateOnce.Do(func() { templateName, templateErr = buildTemplate(base) })
	if templateErr != nil {
		t.Fatalf("error preparing template database: %v", templateErr)
	}
	return templateName
}

func buildTemplate(base string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "fd_tpl_" + sum[:12]
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", fmt.Errorf("error connecting to %s: %w", EnvURL, err)
	}
	defer admin.Close(context.Background())
	// A template's objects belong to the role that migrated it, and a clone
	// keeps them: each role (the app role, a superuser of an older cluster)
	// has templates of its own.
	var role string
	if err := admin.QueryRow(ctx, `SELECT current_user`).Scan(&role); err != nil {
		return "", err
	}
	if databaseSafe(role) {
		name += "_" + role
	}
	lockID := int64(binary.BigEndian.Uint64([]byte(sum[:8])))
	if _, err := admin.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockID); err != nil {
		return "", err
	}
	defer admin.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, lockID) //nolint:errcheck
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_build"
	if _, err := admin.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, building)); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s`, building)); err != nil {
		return "", err
	}
	pool, err := pgxpool.New(ctx, withDatabase(nil, base, building))
	if err != nil {
		return "", err
	}
	err = store.New(pool).Migrate(ctx, nil)
	pool.Close()
	if err != nil {
		return "", err
	}
	for _, q := range []string{
		fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`, building, name),
		fmt.Sprintf(`ALTER DATABASE %s IS_TEMPLATE true`, name),
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			return "", err
		}
	}
	return name, nil
}

func migrationsHash() (string, error) {
	h := sha256.New()
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := fs.ReadFile(migrations.FS, n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\n%d\n", n, len(b))
		h.Write(b)
	}
	// Migrate also writes what it makes from Go.
	h.Write([]byte(store.TransitionRule()))
	return hex.EncodeToString(h.Sum(nil)), nil
}

func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("error connecting to %s: %v", EnvURL, err)
	}
	return c
}

// withDatabase returns url with its database replaced by name. Only URL-form
// connection strings are supported (postgres://…).
func withDatabase(t testing.TB, raw, name string) string {
	u, err := neturl.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		if t != nil {
			t.Fatalf("%s must be a postgres:// URL", EnvURL)
		}
		return raw
	}
	u.Path = "/" + name
	return u.String()
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// databaseSafe: s can go into a database name unquoted.
func databaseSafe(s string) bool {
	if s == "" || len(s) > 30 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
