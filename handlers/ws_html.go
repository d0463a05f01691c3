package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/views/pages"
)

// htmxMessage is what the htmx ws extension sends for a ws-send form: its
// fields plus HEADERS.
type htmxMessage struct {
	Type       string          `json:"type"`
	ApprovalID string          `json:"approval_id"`
	Comment    string          `json:"comment"`
	Priority   string          `json:"priority"`
	QuestionID string          `json:"question_id"`
	Text       string          `json:"text"`
	Action     string          `json:"action"`
	Headers    json.RawMessage `json:"HEADERS"`
}

// wsTaskHTML is the task page's htmx socket: it pushes the page's sections
// (swapped by id) whenever the task's events move, and takes the page's
// buttons. Each push re-renders from the database, so a reconnect simply
// catches up. The page says the seq it shows (after_seq, the contract's
// name for a resume): the socket resumes from the model the page (or the
// socket before it) folded up to there, and reads only the events after.
//
// Everything that uses c runs on this goroutine: echo reuses c for another
// request once the handler returns, so the reader goroutine only hands
// frames over, and is joined before returning.
func (h *Handler) wsTaskHTML(c echo.Context) error {
	id := c.Param("id")
	u := userOf(c)
	ctx, cancel := context.WithTimeout(c.Request().Context(), h.requestTimeout())
	_, err := h.store.TaskGet(ctx, u.TeamIDs(), id)
	cancel()
	if err != nil {
		return err
	}
	conn, err := h.acceptWS(c)
	if err != nil || conn == nil {
		return err
	}
	frames := make(chan []byte)
	var reader sync.WaitGroup
	defer reader.Wait()
	defer conn.close(websocket.StatusNormalClosure, "")
	reader.Go(func() {
		for {
			raw, err := conn.read()
			if errors.Is(err, errBinaryFrame) {
				continue
			}
			if err != nil {
				conn.close(websocket.StatusNormalClosure, "")
				return
			}
			select {
			case frames <- raw:
			case <-conn.ctx.Done():
				return
			}
		}
	})

	sub := h.hub.Subscribe(id)
	defer sub.Close()
	defer h.watchApprovals(conn, u, shownBadge(c.QueryParam("badge")))()
	poll := time.NewTicker(5 * time.Second)
	defer poll.Stop()
	lastSeq := -1
	token := csrfToken(c)
	push := newTaskPush(c)
	if push.seq >= 0 {
		if m := h.runModels.resume(id, push.seq); m != nil {
			push.model = m
		}
	}
	kept := -1
	standing := "" // a flash that stands until the page shows its outcome
	for {
		p, err := h.loadTaskShow(conn.ctx, u, id, push.model)
		p.CSRFToken = token
		if err == nil && p.Seq != lastSeq {
			lastSeq = p.Seq
			f := push.frame(p)
			if len(f) > 0 && push.model.seq == push.seq && push.seq != kept {
				// Kept before the page hears of it: its reconnect resumes here.
				h.runModels.keep(id, push.model.clone(), kept)
				kept = push.seq
			}
			if len(f) > 0 && !conn.send(f) {
				return nil
			}
			if standing != "" && flashOvertaken(standing, p) {
				// The page itself now says it (the Paused card, the
				// cancelled badge): the flash would only be stale.
				standing = ""
				if !h.pushFlash(conn, pages.TaskShowProps{}) {
					return nil
				}
			}
		}
		select {
		case <-conn.ctx.Done():
			return nil
		case raw := <-frames:
			f, now := h.htmlMessage(c, conn, id, raw)
			if now == nil {
				return nil // credentials ended: the socket is closing
			}
			u = now
			standing = ""
			if !f.FlashError && (f.Flash == flashPause || f.Flash == flashCancel) {
				standing = f.Flash
			}
			if !h.pushFlash(conn, f) {
				return nil
			}
		case <-sub.C:
		case <-poll.C:
		}
	}
}

// htmlMessage acts on one frame of the page and returns the flash to show
// and the user as the credentials say now (nil once they ended).
func (h *Handler) htmlMessage(c echo.Context, conn *wsConn, id string, raw []byte) (pages.TaskShowProps, *auth.User) {
	var p pages.TaskShowProps
	u := userOf(c)
	var m htmxMessage
	if !json.Valid(raw) || duplicateKey(raw) != "" || json.Unmarshal(raw, &m) != nil {
		p.Flash, p.FlashError = "That message could not be read.", true
		return p, u
	}
	if ok, _ := h.wsRate.Allow(u.ID); !ok {
		p.Flash, p.FlashError = "Too many actions; slow down.", true
		return p, u
	}
	now, err := h.socketUser(c, conn)
	if errors.Is(err, errRevoked) {
		return p, nil
	}
	if err != nil {
		p.Flash, p.FlashError = toAPIError(err).Message, true
		return p, u
	}
	if err := h.htmlAction(c, id, m); err != nil {
		p.Flash, p.FlashError = toAPIError(err).Message, true
		return p, now
	}
	p.Flash = map[string]string{"cancel": flashCancel, "approve": "Approved.", "reject": "Rejected.", "set_priority": "Priority changed.",
		"answer": "Answer sent; the agent resumes.", "message": "Note sent; the agent reads it at its next step.",
		"pause": flashPause, "resume": resumeFlash[m.Action]}[m.Type]
	return p, now
}

// The flashes of requests that take effect later: each stands until the
// page shows what it asked for (flashOvertaken).
const (
	flashPause  = "Pause requested."
	flashCancel = "Cancel requested."
)

// flashOvertaken says whether the page now shows the outcome of the
// standing flash: the task paused, or ended.
func flashOvertaken(flash string, p pages.TaskShowProps) bool {
	if p.Task.Terminal() {
		return true
	}
	return flash == flashPause && p.Control != nil && p.Control.Paused
}

var resumeFlash = map[string]string{"": "Resumed.", "continue": "Resumed.", "retry": "Retrying the step.",
	"skip": "Step skipped; the task goes on.", "rollback": "Rolling back."}

func (h *Handler) htmlAction(c echo.Context, id string, m htmxMessage) error {
	var err error
	switch m.Type {
	case "cancel":
		_, err = h.cancelTask(c, id)
	case "pause":
		_, err = h.pauseTask(c, id)
	case "resume":
		_, err = h.resumeTask(c, id, resumeRequest{Action: m.Action, Comment: m.Comment})
	case "approve", "reject":
		_, err = h.decideApproval(c, id, m.ApprovalID, m.Type == "approve", m.Comment)
	case "set_priority":
		_, err = h.setPriority(c, id, m.Priority)
	case "answer", "message":
		err = h.agentInput(c, m.Type, id, m.QuestionID, m.Text)
	default:
		err = errInvalid("type", "unknown action")
	}
	return err
}

func (h *Handler) pushFlash(conn *wsConn, p pages.TaskShowProps) bool {
	var buf bytes.Buffer
	_ = pages.Flash(p).Render(context.Background(), &buf)
	return conn.send(buf.Bytes())
}
