package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"flightdeck/internal/config"
	"flightdeck/internal/pgcluster"
	"flightdeck/store"
)

// databaseURL returns DATABASE_URL, or starts the embedded cluster under the
// data folder and returns its URL.
func databaseURL(ctx context.Context, env *cliEnv, cfg config.Config) (string, error) {
	return embeddedURL(ctx, env, cfg, false)
}

// benchServerURL is databaseURL for the benchmarks, which make and drop
// databases of their own and checkpoint the server: on the embedded cluster
// they connect as its superuser, not as the app role serve uses.
func benchServerURL(ctx context.Context, env *cliEnv, cfg config.Config) (string, error) {
	return embeddedURL(ctx, env, cfg, true)
}

func embeddedURL(ctx context.Context, env *cliEnv, cfg config.Config, admin bool) (string, error) {
	if cfg.DatabaseURL != "" {
		return cfg.DatabaseURL, nil
	}
	// The test suite's own cluster (durability off) gives each test a
	// database of its own: its app role may create them.
	url, err := pgcluster.Ensure(ctx, pgcluster.Options{Dir: cfg.DataDir, Logger: env.logger, DurabilityOff: cfg.DBDurabilityOff,
		CreateDB: cfg.DBDurabilityOff, Admin: admin})
	if err != nil {
		return "", fmt.Errorf("error starting the embedded PostgreSQL (set DATABASE_URL to use another server): %w", err)
	}
	return url, nil
}

// freshEmbeddedURL drops and creates database name on the embedded
// cluster as its superuser, owned by the app role, and returns the app
// role's URL to it.
func freshEmbeddedURL(ctx context.Context, env *cliEnv, cfg config.Config, name string) (string, error) {
	if !store.ValidDatabaseName(name) {
		return "", fmt.Errorf("%w: invalid database name %q", errUsage, name)
	}
	url, err := pgcluster.Ensure(ctx, pgcluster.Options{Dir: cfg.DataDir, Logger: env.logger, DurabilityOff: cfg.DBDurabilityOff,
		CreateDB: cfg.DBDurabilityOff, Database: name, Fresh: true})
	if err != nil {
		return "", fmt.Errorf("error making database %s on the embedded PostgreSQL: %w", name, err)
	}
	return url, nil
}

// openStore connects to the configured database.
func openStore(ctx context.Context, env *cliEnv, cfg config.Config, maxConns int32) (*store.Store, error) {
	url, err := databaseURL(ctx, env, cfg)
	if err != nil {
		return nil, err
	}
	pool, err := store.Open(ctx, url, maxConns)
	if err != nil {
		return nil, err
	}
	return store.New(pool), nil
}

// requestStore is the web requests' store: its own pool, whose every
// statement the database cuts off after cfg.StatementTimeout, sharing st's
// wake-ups. Workers, migrations and background loops keep st's pool, with
// no such bound. Handlers' background loops (the live dashboard's renders)
// are bounded alike.
func requestStore(ctx context.Context, cfg config.Config, st *store.Store) (*store.Store, error) {
	pool, err := store.OpenRequests(ctx, cfg.DatabaseURL, requestConns, cfg.StatementTimeout)
	if err != nil {
		return nil, err
	}
	return st.WithPool(pool), nil
}

// requestConns is the size of the web requests' pool.
const requestConns = 16

// newFlagSet returns a flag set that reports errors as usage errors.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

func runDB(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: db needs url or stop", errUsage)
	}
	cfg, err := config.Load(env.getenv)
	if err != nil {
		return err
	}
	switch args[0] {
	case "url":
		fs := newFlagSet("db url", env.stderr)
		fresh := fs.String("fresh", "", "drop and create this database and print its URL instead")
		if err := parseFlags(fs, args[1:]); err != nil {
			return err
		}
		var url string
		switch {
		case *fresh == "":
			url, err = databaseURL(ctx, env, cfg)
		case cfg.DatabaseURL != "":
			url, err = store.RecreateDatabase(ctx, cfg.DatabaseURL, *fresh)
		default:
			// The embedded cluster's app role has no CREATEDB (least
			// privilege): its superuser makes the database and hands it on.
			url, err = freshEmbeddedURL(ctx, env, cfg, *fresh)
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(env.stdout, url)
		return nil
	case "stop":
		return pgcluster.Stop(ctx, cfg.DataDir)
	}
	return fmt.Errorf("%w: unknown db command %q", errUsage, args[0])
}

func runMigrate(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("migrate", env.stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(env.getenv)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, env, cfg, 2)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Migrate(ctx, env.logger)
}
