package notify

import (
	"context"
	"log/slog"
	"sync"

	"fmt"
	"time"
)

// Connector opens a connection for LISTEN (the store: its database, its
// credentials), outside any pool: it is held for as long as the process
// lives and must not count against request connections.
type Connector interface {
	ListenConn(ctx context.Context, applicationName string) (Conn, error)
}

// Conn is one LISTEN connection. The store implements it over its driver,
// so this package stays free of database drivers (pgx lives in store).
type Conn interface {
	// Listen starts listening on channel (quoted by the implementation).
	Listen(ctx context.Context, channel string) error
	// WaitForNotification returns the next notification, or an error when
	// ctx ends or the connection dies.
	WaitForNotification(ctx context.Context) (Notification, error)
	Ping(ctx context.Context) error
	IsClosed() bool
	Close(ctx context.Context) error
}

// Listener owns the process's LISTEN connection and hands each topic's
// notifications to the handlers registered for it.
type Listener struct {
	db     Connector
	logger *slog.Logger

	mu        sync.RWMutex
	handlers  map[Topic][]func(payload string)
	connected []func()
}

// NewListener returns a listener on db; register handlers before Run.
func NewListener(db Connector, logger *slog.Logger) *Listener {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Listener{db: db, logger: logger, handlers: map[Topic][]func(string){}}
}

// On registers fn for notifications of topic (decode the payload with
// package wake). fn runs on the listening goroutine: it must not block.
func (n *Listener) On(topic Topic, fn func(payload string)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.handlers[topic] = append(n.handlers[topic], fn)
}

// OnConnect registers fn to run after every (re)connection, when
// notifications may have been missed.
func (n *Listener) OnConnect(fn func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.connected = append(n.connected, fn)
}

// Run listens until ctx ends, reconnecting as needed.
func (n *Listener) Run(ctx context.Context) error {
	channels := make([]string, len(Topics))
	for i, t := range Topics {
		channels[i] = string(t)
	}
	return Listen(ctx, n.db, ListenParams{
		Channels: channels,
		Logger:   n.logger,
		Handle: func(note Notification) {
			n.mu.RLock()
			hs := n.handlers[Topic(note.Channel)]
			n.mu.RUnlock()
			for _, h := range hs {
				h(note.Payload)
			}
		},
		Connected: func() {
			n.mu.RLock()
			cs := n.connected
			n.mu.RUnlock()
			for _, c := range cs {
				c()
			}
		},
	})
}

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
func Listen(ctx context.Context, db Connector, p ListenParams) error {
	retry := p.Retry
	if retry <= 0 {
		retry = time.Second
	}
	logger := p.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for {
		err := listenOnce(ctx, db, p)
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

func listenOnce(ctx context.Context, db Connector, p ListenParams) error {
	conn, err := db.ListenConn(ctx, ListenApplicationName)
	if err != nil {
		return fmt.Errorf("error connecting: %w", err)
	}
	defer conn.Close(context.Background())
	for _, ch := range p.Channels {
		if err := conn.Listen(ctx, ch); err != nil {
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
			if waitCtx.Err() != nil && !conn.IsClosed() {
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
		p.Handle(n)
	}
}
