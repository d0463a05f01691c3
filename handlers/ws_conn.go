package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"flightdeck/internal/metrics"
)

// Socket limits. A client that cannot take wsSendBuffer messages, or one
// message within wsWriteTimeout, is disconnected rather than waited on.
const (
	wsReadLimit    = 64 << 10
	wsSendBuffer   = 256
	wsWriteTimeout = 5 * time.Second
	wsPingEvery    = 30 * time.Second
)

// wsConn is one accepted socket: a single reader (the caller's loop) and a
// single writer goroutine draining a bounded queue (live pushes) and a
// hand-off channel (replays, paced by the client).
type wsConn struct {
	c      *websocket.Conn
	out    chan []byte
	paced  chan []byte
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	slow   *metrics.Counter // counts closes for a client that stopped reading
	// slowOnce counts a socket once: until its close frame is out (up to
	// wsWriteTimeout) every further send finds the queue full too.
	slowOnce sync.Once
}

// originAllowed: browsers always send Origin on a WebSocket upgrade; it must
// be this server or one listed in FLIGHTDECK_ALLOWED_ORIGINS. Clients
// without Origin (CLI, scripts) authenticate with a bearer token.
func (h *Handler) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	// The server's own origin is its scheme and host: a page on the same
	// host over plain HTTP (which anyone on the path can forge) is not
	// the HTTPS site. A TLS proxy in front says https in X-Forwarded-Proto.
	if strings.EqualFold(u.Host, r.Host) && strings.EqualFold(u.Scheme, requestScheme(r)) {
		return true
	}
	return slices.ContainsFunc(h.cfg.AllowedOrigins, func(a string) bool {
		return strings.EqualFold(strings.TrimRight(a, "/"), strings.TrimRight(origin, "/"))
	})
}

// requestScheme is the scheme the client used: https over TLS to this
// server or to a proxy that says so, http otherwise.
func requestScheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	if p, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ","); strings.EqualFold(strings.TrimSpace(p), "https") {
		return "https"
	}
	return "http"
}

// wsOrigin refuses a socket from a foreign origin before anything else,
// credentials or not (quality.md): a foreign page learns nothing, not even
// whether its visitor is signed in. A session cookie needs an Origin.
func (h *Handler) wsOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !h.originAllowed(r) {
			return &APIError{Status: http.StatusForbidden, Code: "forbidden", Message: "cross-origin WebSocket refused"}
		}
		// Browsers always send Origin with an upgrade: one that signs in with
		// the session cookie but says no origin is not a browser of ours,
		// and its origin cannot be checked. Scripts use a bearer token.
		if r.Header.Get("Origin") == "" && r.Header.Get("Authorization") == "" {
			if ck, err := r.Cookie(sessionCookie); err == nil && ck.Value != "" {
				return &APIError{Status: http.StatusForbidden, Code: "forbidden", Message: "a WebSocket signed in by session cookie must send Origin"}
			}
		}
		return next(c)
	}
}

// acceptWS upgrades (wsOrigin checked the origin); the returned conn's
// writer runs until the conn closes.
func (h *Handler) acceptWS(c echo.Context) (*wsConn, error) {
	ws, err := websocket.Accept(c.Response(), c.Request(), &websocket.AcceptOptions{InsecureSkipVerify: true /* wsOrigin checked it */})
	if err != nil {
		return nil, nil // Accept already answered the client
	}
	ws.SetReadLimit(wsReadLimit)
	// The request's context ends when the server shuts down (and when the
	// handler returns). Then the socket closes with 1012 (service restart),
	// the frame sent before its own context ends: browsers (htmx's ws
	// extension) reconnect after 1012, to another process behind the proxy,
	// but never after 1000.
	ctx, cancel := context.WithCancel(context.WithoutCancel(c.Request().Context()))
	conn := &wsConn{c: ws, out: make(chan []byte, wsSendBuffer), paced: make(chan []byte), ctx: ctx, cancel: cancel,
		slow: h.metrics.slowSockets}
	context.AfterFunc(c.Request().Context(), func() { conn.close(websocket.StatusServiceRestart, "server restarting") })
	go conn.writer()
	if cr, ok := credentialOf(c); ok {
		h.sockets.watch(conn, cr)
	}
	return conn, nil
}

func (w *wsConn) writer() {
	ping := time.NewTicker(wsPingEvery)
	defer ping.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case msg := <-w.out:
			if !w.write(msg) {
				return
			}
		case msg := <-w.paced:
			if !w.write(msg) {
				return
			}
		case <-ping.C:
			// Dead peers do not answer pings; cut them loose.
			ctx, cancel := context.WithTimeout(w.ctx, wsWriteTimeout)
			err := w.c.Ping(ctx)
			cancel()
			if err != nil {
				w.close(websocket.StatusPolicyViolation, "ping timeout")
				return
			}
		}
	}
}

// write sends one frame; a client that does not take it within
// wsWriteTimeout has stopped reading and is closed (1008).
func (w *wsConn) write(msg []byte) bool {
	ctx, cancel := context.WithTimeout(w.ctx, wsWriteTimeout)
	err := w.c.Write(ctx, websocket.MessageText, msg)
	// This write's own deadline, not the socket's end: the reader may
	// already have closed the socket the timed-out write tore down.
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	cancel()
	if err != nil {
		if timedOut {
			w.slowOnce.Do(w.slow.Inc)
		}
		w.close(websocket.StatusPolicyViolation, "write timeout: client too slow")
		return false
	}
	return true
}

// sendPaced hands a message to the writer and waits until it took it: a
// replay of stored events goes at the pace the client reads, however long
// the history, instead of overflowing the send buffer. Only a client that
// stops reading is closed (by the write timeout). It reports false once ctx
// (the subscription's, within the socket's) ended.
func (w *wsConn) sendPaced(ctx context.Context, msg []byte) bool {
	select {
	case w.paced <- msg:
		return true
	case <-ctx.Done():
		return false
	}
}

// send queues a message; a full queue means the client does not keep up:
// it is closed (1008) and reconnects with after_seq.
func (w *wsConn) send(msg []byte) bool {
	select {
	case <-w.ctx.Done():
		return false
	default:
	}
	select {
	case w.out <- msg:
		return true
	default:
		w.slowOnce.Do(w.slow.Inc)
		w.close(websocket.StatusPolicyViolation, "client too slow: send buffer full")
		return false
	}
}

// close ends the socket with code and reason. The close frame goes out
// before the socket's context ends: a Read cancelled by that context would
// cut the connection before the client learns why (e.g. 1008, credentials
// ended). Writes after the close frame fail, so nothing more is sent.
func (w *wsConn) close(code websocket.StatusCode, reason string) {
	w.once.Do(func() {
		go func() {
			_ = w.c.Close(code, reason)
			w.cancel()
		}()
	})
}

// read returns the next text message. Binary frames are reported as
// errBinaryFrame and reading goes on.
func (w *wsConn) read() ([]byte, error) {
	typ, b, err := w.c.Read(w.ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, errBinaryFrame
	}
	return b, nil
}

var errBinaryFrame = errors.New("binary frames are not supported; send JSON text")

// drain reads and drops what a push-only socket's client sends, so the
// close is noticed; it returns when the socket ends.
func (w *wsConn) drain() {
	for {
		if _, err := w.read(); err != nil && !errors.Is(err, errBinaryFrame) {
			w.close(websocket.StatusNormalClosure, "")
			return
		}
	}
}
