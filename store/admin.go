package store

import (
	"context"
	"fmt"
	"net/url"
	"regexp"

	"github.com/jackc/pgx/v5"
)

var databaseName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

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
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", interpretError(err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{
		fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name),
		fmt.Sprintf(`CREATE DATABASE %s`, name),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return "", fmt.Errorf("error recreating database %s: %w", name, interpretError(err))
		}
	}
	u.Path = "/" + name
	return u.String(), nil
}

// DropDatabase drops database name on the server of serverURL.
func DropDatabase(ctx context.Context, serverURL, name string) error {
	if !databaseName.MatchString(name) {
		return fmt.Errorf("invalid database name %q", name)
	}
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return interpretError(err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
	return interpretError(err)
}

// Checkpoint runs CHECKPOINT on the server of url, so a benchmark phase does
// not pay for the writes of the phase before it. It needs a superuser or a
// member of pg_checkpoint; callers treat a refusal as a warning.
func Checkpoint(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("error connecting for a checkpoint: %w", interpretError(err))
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CHECKPOINT`); err != nil {
		return fmt.Errorf("error running CHECKPOINT: %w", interpretError(err))
	}
	return nil
}

// VacuumAnalyze runs VACUUM (ANALYZE) on the database of url: a benchmark
// settles what its set-up inserted (visibility, statistics) before the
// measured phase, instead of autovacuum doing it in the middle of it.
func VacuumAnalyze(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("error connecting for VACUUM: %w", interpretError(err))
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `VACUUM (ANALYZE)`); err != nil {
		return fmt.Errorf("error running VACUUM: %w", interpretError(err))
	}
	return nil
}
