package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Notification is one NOTIFY received on a LISTEN connection.
type Notification struct {
	Channel string
	Payload string
}

// ListenParams configure Listen.
type ListenParams struct {
	Channels []string
	// Handle is called for each notification, on the listening goroutine:
	// keep it short (signal a channel).
	Handle func(Notification)
	// Connected is called after every (re)connection once LISTEN is in
	// place; notifications sent while disconnected are lost, so listeners
	// catch up by polling then.
	Connected func()
	// Retry is the pause between reconnection attempts (default 1s).
	Retry  time.Duration
	Logger *slog.Logger
}

// ListenApplicationName names LISTEN connections in pg_stat_activity.
const ListenApplicationName = "flightdeck-listen"

// Listen holds a dedicated connection LISTENing on p.Channels until ctx ends,
// reconnecting whenever the connection breaks (database restart,
// pg_terminate_backend). It returns ctx's error.
func (s *Store) Listen(ctx context.Context, p ListenParams) error {
	retry := p.Retry
	if retry <= 0 {
		retry = time.Second
	}
	logger := p.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for {
		err := s.listenOnce(ctx, p)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logger.Warn("LISTEN connection lost; reconnecting", "error", err, "retry", retry)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retry):
		}
	}
}

func (s *Store) listenOnce(ctx context.Context, p ListenParams) error {
	// A connection of its own, outside the pool: it is held for as long as
	// the process lives and must not count against request connections.
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = ListenApplicationName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("error connecting: %w", err)
	}
	defer conn.Close(context.Background())
	for _, ch := range p.Channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return fmt.Errorf("error listening on %s: %w", ch, err)
		}
	}
	if p.Connected != nil {
		p.Connected()
	}
	for {
		// WaitForNotification returns when a notification arrives or the
		// connection dies; a keep-alive ping every 15 s detects a silent
		// half-open connection.
		waitCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if waitCtx.Err() != nil && !conn.PgConn().IsClosed() {
				pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err := conn.Ping(pingCtx)
				cancel()
				if err != nil {
					return fmt.Errorf("keep-alive failed: %w", err)
				}
				continue
			}
			return err
		}
		p.Handle(Notification{Channel: n.Channel, Payload: n.Payload})
	}
}
