package store

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var (
	// ErrNotFound: no such row, or not visible to the caller's teams.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique key or state precondition did not hold.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: the database could not be reached.
	ErrUnavailable = errors.New("database unavailable")
)

// interpretError maps driver errors to the store's sentinels, keeping the
// original in the chain for logs.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %s", ErrConflict, pgErr.ConstraintName)
		case "57P01", "57P02", "57P03", "08000", "08003", "08006", "08001", "08004":
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}
