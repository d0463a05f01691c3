package handlers

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/store"
)

// closeRevoked is the close reason of a socket whose credentials ended.
const closeRevoked = "credentials revoked or session ended"

// socketAuth closes sockets whose token was revoked or whose session ended
// (logout, expiry) even while they send nothing: every WSAuthCheck it looks
// up the credentials of all open sockets of this process in two queries.
// The loop runs while sockets are open.
type socketAuth struct {
	h       *Handler
	mu      sync.Mutex
	conns   map[*wsConn]credential
	running bool
}

// watch registers an accepted socket until it closes.
func (a *socketAuth) watch(conn *wsConn, cr credential) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conns == nil {
		a.conns = map[*wsConn]credential{}
	}
	a.conns[conn] = cr
	context.AfterFunc(conn.ctx, func() {
		a.mu.Lock()
		delete(a.conns, conn)
		a.mu.Unlock()
	})
	if !a.running {
		a.running = true
		go a.loop()
	}
}

func (a *socketAuth) loop() {
	tick := time.NewTicker(cmp.Or(a.h.cfg.WSAuthCheck, config.WSAuthCheckDefault))
	defer tick.Stop()
	for range tick.C {
		a.mu.Lock()
		if len(a.conns) == 0 {
			a.running = false
			a.mu.Unlock()
			return
		}
		conns := make(map[*wsConn]credential, len(a.conns))
		for c, cr := range a.conns {
			conns[c] = cr
		}
		a.mu.Unlock()
		a.check(conns)
	}
}

// check closes the sockets whose credentials are gone. A database it cannot
// reach closes nothing: the next round, or the socket's next message, will
// tell.
func (a *socketAuth) check(conns map[*wsConn]credential) {
	var sessions, tokens [][]byte
	for _, cr := range conns {
		if cr.session {
			sessions = append(sessions, cr.hash)
		} else {
			tokens = append(tokens, cr.hash)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.h.requestTimeout())
	defer cancel()
	liveSessions, err := a.h.store.SessionsLive(ctx, sessions)
	if err != nil {
		a.h.logger.Warn("Socket credential check failed", "error", err)
		return
	}
	liveTokens, err := a.h.store.TokensLive(ctx, tokens)
	if err != nil {
		a.h.logger.Warn("Socket credential check failed", "error", err)
		return
	}
	for c, cr := range conns {
		live := liveTokens
		if cr.session {
			live = liveSessions
		}
		if !live[string(cr.hash)] {
			c.close(websocket.StatusPolicyViolation, closeRevoked)
		}
	}
}

// socketUser looks the socket's credentials up again before it acts on a
// message, so every message runs with the rights they carry now. Ended
// credentials close the socket (1008) and the message does nothing
// (errRevoked); the user is also set on c for the handlers it calls.
func (h *Handler) socketUser(c echo.Context, conn *wsConn) (*auth.User, error) {
	cr, ok := credentialOf(c)
	if !ok {
		return nil, errUnauthenticated
	}
	ctx, cancel := context.WithTimeout(conn.ctx, h.requestTimeout())
	defer cancel()
	u, err := h.credentialUser(ctx, cr)
	if errors.Is(err, store.ErrNotFound) {
		conn.close(websocket.StatusPolicyViolation, closeRevoked)
		return nil, errRevoked
	}
	if err != nil {
		return nil, err
	}
	c.Set(ctxUser, u)
	return u, nil
}

var errRevoked = errors.New(closeRevoked)
