package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"flightdeck/internal/ratelimit"
	"flightdeck/workflow/task"
)

// wsMessage is a client → server message (contract section 5).
type wsMessage struct {
	Type       string `json:"type"`
	ID         string `json:"id,omitempty"`
	TaskID     string `json:"task_id,omitempty"`
	AfterSeq   int    `json:"after_seq,omitempty"`
	Topic      string `json:"topic,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`
	QuestionID string `json:"question_id,omitempty"`
	Comment    string `json:"comment,omitempty"`
	Text       string `json:"text,omitempty"`
	Priority   string `json:"priority,omitempty"`
	Action     string `json:"action,omitempty"` // resume: continue, retry, skip or rollback
}

type wsOut struct {
	Type    string      `json:"type"`
	ID      string      `json:"id,omitempty"`
	Code    string      `json:"code,omitempty"`
	Message string      `json:"message,omitempty"`
	Event   *task.Event `json:"event,omitempty"`
	Task    any         `json:"task,omitempty"`
}

// wsAPI is /api/v1/ws: JSON frames. Every inbound message is authorised on
// its own with the same code paths as the HTTP API.
func (h *Handler) wsAPI(c echo.Context) error {
	conn, err := h.acceptWS(c)
	if err != nil || conn == nil {
		return err
	}
	s := &wsSession{h: h, c: c, conn: conn, subs: map[string]context.CancelFunc{}, limit: h.wsRate, userID: userOf(c).ID}
	defer s.closeAll()
	for {
		raw, err := conn.read()
		if errors.Is(err, errBinaryFrame) {
			s.reply(wsOut{Type: "error", Code: "invalid", Message: err.Error()})
			continue
		}
		if err != nil {
			if websocket.CloseStatus(err) == -1 && conn.ctx.Err() == nil {
				requestLogger(c, h.logger).Debug("WebSocket read ended", "error", err)
			}
			conn.close(websocket.StatusNormalClosure, "")
			return nil
		}
		s.handle(raw)
	}
}

// wsSession is one socket's state: its subscriptions.
type wsSession struct {
	h     *Handler
	c     echo.Context
	conn  *wsConn
	limit *ratelimit.Limiter
	mu    sync.Mutex
	subs  map[string]context.CancelFunc // task id or "team"
	wg    sync.WaitGroup
	// userID keys the rate limit: the socket's user, whose rights are
	// looked up again for every message.
	userID string
}

func (s *wsSession) reply(m wsOut) {
	b, _ := json.Marshal(m)
	s.conn.send(b)
}

func (s *wsSession) fail(id string, err error) {
	e := toAPIError(err)
	code := e.Code
	switch code {
	case "forbidden", "not_found", "conflict", "invalid", "rate_limited":
	case "idempotency_conflict":
		code = "conflict"
	default:
		code = "invalid"
		if e.Status >= 500 {
			e.Message = "the server could not do this now; try again"
		}
	}
	s.reply(wsOut{Type: "error", ID: id, Code: code, Message: e.Message})
}

// parseWSMessage decodes one client frame strictly. A frame that is not
// a valid message gets the error reply to send, carrying the frame's id
// when it has a readable one.
func parseWSMessage(raw []byte) (wsMessage, *wsOut) {
	var m wsMessage
	if !utf8.Valid(raw) {
		return m, &wsOut{Type: "error", Code: "invalid", Message: "message is not valid UTF-8"}
	}
	if err := decodeStrict(raw, &m); err != nil {
		var probe struct {
			ID any `json:"id"`
		}
		_ = json.Unmarshal(raw, &probe)
		id, _ := probe.ID.(string)
		return wsMessage{}, &wsOut{Type: "error", ID: id, Code: "invalid", Message: toAPIError(err).Message}
	}
	return m, nil
}

func (s *wsSession) handle(raw []byte) {
	m, bad := parseWSMessage(raw)
	if bad != nil {
		s.reply(*bad)
		return
	}
	if ok, _ := s.limit.Allow(s.userID); !ok {
		s.reply(wsOut{Type: "error", ID: m.ID, Code: "rate_limited", Message: "too many messages; slow down"})
		return
	}
	if m.Type == "ping" {
		s.reply(wsOut{Type: "pong", ID: m.ID})
		return
	}
	// Every other message acts with the rights the credentials have now.
	if _, err := s.h.socketUser(s.c, s.conn); err != nil {
		if !errors.Is(err, errRevoked) {
			s.fail(m.ID, err)
		}
		return
	}
	var err error
	switch m.Type {
	case "cancel", "pause", "resume", "approve", "reject", "set_priority", "answer", "message":
		// A message about a task names it: without one it is malformed
		// (invalid), not a task that does not exist (not_found).
		if m.TaskID == "" {
			s.fail(m.ID, errInvalid("task_id", "task_id is required for %s", m.Type))
			return
		}
	}
	switch m.Type {
	case "subscribe":
		err = s.subscribe(m)
	case "unsubscribe":
		key := m.TaskID
		if m.Topic != "" {
			key = m.Topic
		}
		s.mu.Lock()
		if stop, ok := s.subs[key]; ok {
			stop()
			delete(s.subs, key)
		}
		s.mu.Unlock()
	case "cancel":
		_, err = s.h.cancelTask(s.c, m.TaskID)
	case "pause":
		_, err = s.h.pauseTask(s.c, m.TaskID)
	case "resume":
		_, err = s.h.resumeTask(s.c, m.TaskID, resumeRequest{Action: m.Action, Comment: m.Comment})
	case "approve", "reject":
		_, err = s.h.decideApproval(s.c, m.TaskID, m.ApprovalID, m.Type == "approve", m.Comment)
	case "set_priority":
		_, err = s.h.setPriority(s.c, m.TaskID, m.Priority)
	case "answer", "message":
		err = s.h.agentInput(s.c, m.Type, m.TaskID, m.QuestionID, m.Text)
	case "":
		err = errInvalid("type", "type is required")
	default:
		err = errInvalid("type", "unknown message type %q", m.Type)
	}
	if err != nil {
		s.fail(m.ID, err)
		return
	}
	if m.ID != "" && m.Type != "subscribe" {
		s.reply(wsOut{Type: "ack", ID: m.ID})
	}
}

// subscribe starts streaming a task's events (replay after after_seq, then
// live) or the team feed. The ack goes out before the first event.
func (s *wsSession) subscribe(m wsMessage) error {
	ctx := s.conn.ctx
	u := userOf(s.c)
	key := m.TaskID
	switch {
	case m.Topic == "team" && m.TaskID == "":
		key = "team"
	case m.Topic != "":
		return errInvalid("topic", "unknown topic %q (want team)", m.Topic)
	case m.TaskID == "":
		return errInvalid("task_id", "task_id or topic is required")
	default:
		if m.AfterSeq < 0 {
			return errInvalid("after_seq", "after_seq must not be negative")
		}
		if _, err := s.h.store.TaskGet(ctx, u.TeamIDs(), m.TaskID); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if stop, ok := s.subs[key]; ok {
		stop() // re-subscribing restarts from the new after_seq
	}
	ack := func() {
		if m.ID != "" {
			s.reply(wsOut{Type: "ack", ID: m.ID})
		}
	}
	if key == "team" {
		// The process-wide feed loads and encodes each change once.
		s.subs[key] = s.h.teamFeed.subscribe(u.TeamIDs(), func(c *taskChange) bool { return s.conn.send(c.frame) }, ack)
		return nil
	}
	subCtx, cancel := context.WithCancel(ctx)
	s.subs[key] = cancel
	ack()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// Events come from the database by seq, so the stream may wait on
		// the socket: replay and live alike go at the client's pace.
		s.h.streamEvents(subCtx, m.TaskID, m.AfterSeq, func(e task.Event) bool {
			b, _ := json.Marshal(wsOut{Type: "event", Event: &e})
			return s.conn.sendPaced(subCtx, b)
		})
	}()
	return nil
}

func (s *wsSession) closeAll() {
	s.mu.Lock()
	for _, stop := range s.subs {
		stop()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// streamEvents sends a task's events after seq in order, then live ones,
// until ctx ends, send refuses, or the terminal event went out. Reads come
// from the database by seq, so the stream has no gap and no repeat.
func (h *Handler) streamEvents(ctx context.Context, taskID string, after int, send func(task.Event) bool) {
	sub := h.hub.Subscribe(taskID)
	defer sub.Close()
	poll := time.NewTicker(5 * time.Second)
	defer poll.Stop()
	for {
		events, err := h.store.EventsAfter(ctx, taskID, after, 500)
		if err == nil {
			for _, e := range events {
				if !send(e) {
					return
				}
				after = e.Seq
				if e.Type.Terminal() {
					return
				}
			}
			if len(events) == 500 {
				continue // more to replay
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-sub.C:
		case <-poll.C:
		}
	}
}
