package store

import (
	"context"
	"errors"
	"fmt"
	"io"
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
		case "23514": // check_violation
			if pgErr.ConstraintName == "task_transition" {
				// The task moved on meanwhile, or a write asked for a
				// change task.CanTransition does not allow.
				return fmt.Errorf("%w: %s", ErrConflict, pgErr.Message)
			}
		case "57P01", "57P02", "57P03", "08000", "08003", "08006", "08001", "08004":
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		case "57014": // query_canceled: cut off by a web request's statement_timeout
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// InvalidText reports whether PostgreSQL refused a text value it cannot
// store: invalid UTF-8 or a NUL byte (22021), or a \u0000 escape in jsonb
// (22P05). The value came from outside, so the request is at fault, not the
// server (callers answer 4xx, never 500).
func InvalidText(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "22021" || pgErr.Code == "22P05")
}

// Transient reports whether err is a database fault that says nothing about
// the work itself (invariant 10): the server unreachable, restarting or
// shutting down, the connection lost, or a serialization failure or
// deadlock that the same write may simply try again. Such an error is
// retried, or the work handed to another worker; it never fails a task.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "40001", pgErr.Code == "40P01", // serialization failure, deadlock
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // admin shutdown, crash shutdown, cannot connect now
			len(pgErr.Code) == 5 && pgErr.Code[:2] == "08": // connection exception
			return true
		}
		return false
	}
	return errors.Is(interpretError(err), ErrUnavailable)
}
