package store

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var databaseName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// ValidDatabaseName reports whether name is a database name the admin
// commands accept (lower-case letters, digits and underscores).
func ValidDatabaseName(name string) bool { return databaseName.MatchString(name) }

// RecreateDatabase drops (if present) and creates database name on the
// server of serverURL, and returns the new database's URL. For dev and e2e
// runs that want a clean slate.
func RecreateDatabase(ctx context.Context, serverURL, name string) (string, error) {
	if !databaseName.MatchString(name) {
		return "", fmt.Errorf("invalid database name %q", name)
	}
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("database URL must be a postgres:// URL")
	}
	if err := execOn(ctx, serverURL, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name), fmt.Sprintf(`CREATE DATABASE %s`, name)); err != nil {
		return "", fmt.Errorf("error recreating database %s: %w", name, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// DropDatabase drops database name on the server of serverURL.
func DropDatabase(ctx context.Context, serverURL, name string) error {
	if !databaseName.MatchString(name) {
		return fmt.Errorf("invalid database name %q", name)
	}
	return execOn(ctx, serverURL, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
}

// Checkpoint runs CHECKPOINT on the server of dbURL, so a benchmark phase does
// not pay for the writes of the phase before it. It needs a superuser or a
// member of pg_checkpoint; callers treat a refusal as a warning.
func Checkpoint(ctx context.Context, dbURL string) error {
	if err := execOn(ctx, dbURL, `CHECKPOINT`); err != nil {
		return fmt.Errorf("error running CHECKPOINT: %w", err)
	}
	return nil
}

// VacuumAnalyze runs VACUUM (ANALYZE) on the database of dbURL: a benchmark
// settles what its set-up inserted (visibility, statistics) before the
// measured phase, instead of autovacuum doing it in the middle of it.
func VacuumAnalyze(ctx context.Context, dbURL string) error {
	if err := execOn(ctx, dbURL, `VACUUM (ANALYZE)`); err != nil {
		return fmt.Errorf("error running VACUUM: %w", err)
	}
	return nil
}

// execOn runs stmts in order on a connection of its own to dbURL: statements
// that act on a whole database or server (CREATE/DROP DATABASE, CHECKPOINT,
// VACUUM) and cannot run inside a transaction.
func execOn(ctx context.Context, dbURL string, stmts ...string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return interpretError(err)
	}
	defer conn.Close(context.Background())
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			return interpretError(err)
		}
	}
	return nil
}

// ServerPID is the process id of the database server's postmaster, read
// from the postmaster.pid file of its data directory: a benchmark on the
// same machine sums the CPU time of the server's processes. It needs the
// rights to read the data directory's setting (a superuser, or
// pg_read_all_settings) and the file.
func ServerPID(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var dir string
	if err := pool.QueryRow(ctx, `SELECT setting FROM pg_settings WHERE name = 'data_directory'`).Scan(&dir); err != nil {
		return 0, fmt.Errorf("error reading the data directory: %w", interpretError(err))
	}
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(first))
}
