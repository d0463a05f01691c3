package mail

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"flightdeck/store"
	views "flightdeck/views/mail"
	"flightdeck/workflow/event"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// ConsumerName is the mail dispatcher's outbox cursor. Its first read
// creates it at the current position: an upgrade does not mail about
// events that happened before.
const ConsumerName = "mail"

// Types are the events that may call for an email.
var Types = []task.EventType{task.EventApprovalRequested, task.EventTaskPaused, task.EventTaskState,
	task.EventTaskFailed, task.EventTaskCancelled}

// dispatcher turns outbox events into emails: one per person the event
// concerns (contract §12) who has not turned its kind off.
type dispatcher struct {
	st     *store.Store
	pipes  *pipeline.Catalog
	base   string // FLIGHTDECK_BASE_URL without the trailing slash
	logger *slog.Logger
	wake   func()
	now    func() time.Time
}

// notice is what one event asks of whom.
type notice struct {
	kind string // approval | decision | attention | ended
	to   func(p store.MailPerson) bool
	// subject and letter, once the task is loaded
	subject string
	letter  views.Letter
}

func (d *dispatcher) handle(ctx context.Context, events []store.OutboxEvent) error {
	var out []store.MailParams
	for _, e := range events {
		ms, err := d.mails(ctx, e)
		if errors.Is(err, store.ErrNotFound) {
			continue // the task was deleted since
		}
		if err != nil {
			return err
		}
		out = append(out, ms...)
	}
	n, err := d.st.MailEnqueue(ctx, out)
	if err != nil {
		return err
	}
	if n > 0 {
		d.logger.Debug("Emails enqueued", "count", n)
		d.wake()
	}
	return nil
}

// eventData is what the events that concern people carry in data.
type eventData struct {
	State      task.State       `json:"state"`
	ApprovalID string           `json:"approval_id"`
	Roles      []string         `json:"roles"`
	FailedStep *task.FailedStep `json:"failed_step"`
	By         string           `json:"by"`
	Error      *string          `json:"error"`
}

// mails returns the emails of one event (none for most).
func (d *dispatcher) mails(ctx context.Context, e store.OutboxEvent) ([]store.MailParams, error) {
	var data eventData
	_ = json.Unmarshal(e.Data, &data) // an event without data concerns nobody
	switch {
	case e.Type == task.EventApprovalRequested:
	case e.Type == task.EventTaskPaused && data.FailedStep != nil:
	case e.Type == task.EventTaskState && data.State == task.StateNeedsAttention:
	case e.Type == task.EventTaskFailed, e.Type == task.EventTaskCancelled:
	default:
		return nil, nil
	}
	teams := []string{e.TeamID}
	t, err := d.st.TaskGet(ctx, teams, e.TaskID)
	if err != nil {
		return nil, err
	}
	a := describe(t, d.pipes)
	now := d.now()
	creator := OneLine(t.CreatedBy)
	var n notice
	switch e.Type {
	case task.EventApprovalRequested:
		ap, err := d.approval(ctx, teams, t.ID, data)
		if err != nil {
			return nil, err
		}
		kind := task.ApprovalKind(ap.Kind)
		roles := ap.Roles
		if len(roles) == 0 {
			roles = task.DefaultDeciders()
		}
		n.kind = "approval"
		// Every member who may decide it (the one rules table), never the
		// creator: who asked does not need telling.
		n.to = func(p store.MailPerson) bool {
			ok, _ := task.MayDecide(kind, roles, t.CreatedByID, p.UserID, p.Role)
			return ok && p.UserID != t.CreatedByID && p.Role != ""
		}
		subject, headline := approvalAsk(a, ap)
		n.subject = subject
		n.letter = views.Letter{Headline: headline, LinkText: "Review and decide", Link: d.base + "/approvals"}
		n.letter.Facts = append([]views.Fact{{Name: "Asked by", Value: creator}}, a.facts()...)
		if kind != task.ApprovalEnvironment && ap.Step != "" {
			n.letter.Facts = append(n.letter.Facts, views.Fact{Name: "Step", Value: OneLine(ap.Step)})
		}
		if ap.Required > 1 {
			n.letter.Facts = append(n.letter.Facts, views.Fact{Name: "Approvals needed", Value: itoa(ap.Required)})
		}
		who := "any " + strings.Join(roles, " or ") + " of team " + OneLine(t.Team) + ", except " + creator + " (four eyes)"
		if kind == task.ApprovalToolCall {
			who = "any " + strings.Join(roles, " or ") + " of team " + OneLine(t.Team) + ", or " + creator + " who asked"
		}
		n.letter.Facts = append(n.letter.Facts, views.Fact{Name: "Who may decide", Value: who})
		n.letter.Facts = append(n.letter.Facts, views.Fact{Name: "Expires", Value: When(ap.ExpiresAt, now)})
		n.letter.Changes, n.letter.ChangesCut = changes(ap.Changes, a.pipeline)
		n.letter.Why = why(d.base, "you may decide approvals in team "+OneLine(t.Team))
	case task.EventTaskPaused:
		fs := data.FailedStep
		n.kind = "decision"
		n.to = func(p store.MailPerson) bool {
			return p.UserID == t.CreatedByID || task.May(task.Role(p.Role), task.ActSkipStep)
		}
		n.subject = a.what + ": step " + OneLine(fs.Name) + " failed, retry, skip or roll back?"
		n.letter = views.Letter{Headline: "Step " + OneLine(fs.Name) + " of " + a.what + " failed and waits for a decision: retry it, skip it or roll back.",
			LinkText: "Decide on the run page", Link: d.base + "/tasks/" + t.ID}
		n.letter.Facts = append([]views.Fact{{Name: "Started by", Value: creator}}, a.facts()...)
		n.letter.Facts = append(n.letter.Facts, views.Fact{Name: "Error", Value: cut(OneLine(fs.Error), maxLineRunes)},
			views.Fact{Name: "Attempt", Value: itoa(fs.Attempt)})
		if t.DecisionExpiresAt != nil {
			n.letter.Facts = append(n.letter.Facts, views.Fact{Name: "Rolls back by itself", Value: When(*t.DecisionExpiresAt, now)})
		}
		n.letter.Why = why(d.base, "you started this task or may skip its steps")
	case task.EventTaskState:
		n.kind = "attention"
		n.to = func(p store.MailPerson) bool { return task.Role(p.Role) == task.RoleAdmin }
		n.subject = a.what + " needs an admin: undoing its steps failed"
		n.letter = views.Letter{Headline: "Undoing the steps of " + a.what + " failed; it needs an admin to retry or resolve it.",
			LinkText: "Open the task", Link: d.base + "/tasks/" + t.ID}
		n.letter.Facts = append([]views.Fact{{Name: "Started by", Value: creator}}, a.facts()...)
		if msg := errText(data.Error, t.Error); msg != "" {
			n.letter.Facts = append(n.letter.Facts, views.Fact{Name: "Error", Value: msg})
		}
		n.letter.Why = why(d.base, "you are an admin of team "+OneLine(t.Team))
	default: // failed or cancelled
		n.kind = "ended"
		by := OneLine(data.By)
		if by == "" && t.Error != nil {
			if rest, ok := strings.CutPrefix(*t.Error, "cancelled by "); ok {
				by = OneLine(rest)
			}
		}
		if e.Type == task.EventTaskCancelled && by != "" && strings.EqualFold(by, t.CreatedBy) {
			return nil, nil // one's own cancel needs no email
		}
		n.to = func(p store.MailPerson) bool { return p.UserID == t.CreatedByID }
		n.letter = views.Letter{LinkText: "Open the task", Link: d.base + "/tasks/" + t.ID}
		if e.Type == task.EventTaskFailed {
			n.subject = a.what + " failed"
			n.letter.Headline = "Your " + a.what + " failed."
		} else {
			if by == "" {
				by = "someone else"
			}
			n.subject = a.what + " was cancelled by " + by
			n.letter.Headline = "Your " + a.what + " was cancelled by " + by + "."
		}
		n.letter.Facts = a.facts()
		if msg := errText(data.Error, t.Error); msg != "" && !strings.HasPrefix(msg, "cancelled by ") && !strings.HasPrefix(msg, "Cancelled by ") {
			n.letter.Facts = append(n.letter.Facts, views.Fact{Name: "Error", Value: msg})
		}
		if t.FinishedAt != nil {
			n.letter.Facts = append(n.letter.Facts, views.Fact{Name: "Ended", Value: When(*t.FinishedAt, now)})
		}
		n.letter.Why = why(d.base, "you started this task")
	}
	people, err := d.st.MailPeople(ctx, t.TeamID, t.CreatedByID)
	if err != nil {
		return nil, err
	}
	var out []store.MailParams
	var email *Email
	for _, p := range people {
		if !n.to(p) || !p.Wants(n.kind) {
			continue
		}
		if email == nil {
			m, err := Compose(ctx, n.subject, n.letter)
			if err != nil {
				return nil, err
			}
			email = &m
		}
		out = append(out, store.MailParams{TeamID: t.TeamID, TaskID: t.ID, UserID: p.UserID, Seq: e.Seq, Kind: n.kind,
			Recipient: p.Email, Subject: email.Subject, Text: email.Text, HTML: email.HTML})
	}
	return out, nil
}

// approval finds the event's approval; one gone since (deleted with its
// task) is ErrNotFound.
func (d *dispatcher) approval(ctx context.Context, teams []string, taskID string, data eventData) (*store.Approval, error) {
	as, err := d.st.ApprovalList(ctx, teams, taskID)
	if err != nil {
		return nil, err
	}
	for i := range as {
		if as[i].ID == data.ApprovalID {
			return &as[i], nil
		}
	}
	return nil, store.ErrNotFound
}

func errText(evErr, taskErr *string) string {
	for _, p := range []*string{evErr, taskErr} {
		if p != nil && *p != "" {
			return cut(OneLine(*p), maxLineRunes)
		}
	}
	return ""
}

func itoa(n int) string { return strconv.Itoa(n) }

// consumer is the dispatcher as an outbox consumer.
func (d *dispatcher) consumer(poll time.Duration) event.Consumer {
	return event.Consumer{Name: ConsumerName, Types: Types, Handle: d.handle, Poll: poll, Logger: d.logger}
}
