package store

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"flightdeck/migrations"
)

// migrationLockID is the advisory lock that serialises migrations, so several
// `flightdeck serve` processes may start at once against one database.
const migrationLockID = 0x666c6967 // "flig"

// Migrate applies every pending migration under a session advisory lock,
// then the schema made from Go (syncTransitionRule).
func (s *Store) Migrate(ctx context.Context, logger *slog.Logger) error {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID), lock.WithLockTimeout(1, 600))
	if err != nil {
		return fmt.Errorf("error creating migration lock: %w", err)
	}
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	// Out of order: work merged from parallel branches can land a lower
	// number after a higher one was applied somewhere; each migration is
	// independent, so applying the missing one late is right.
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithSessionLocker(locker),
		goose.WithAllowOutofOrder(true))
	if err != nil {
		return fmt.Errorf("error preparing migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("error applying migrations: %w", err)
	}
	for _, r := range results {
		if logger != nil {
			logger.Info("Applied migration", "version", r.Source.Version, "duration", r.Duration)
		}
	}
	return s.syncTransitionRule(ctx)
}
