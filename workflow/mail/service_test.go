package mail_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/notify"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/mail"
	"flightdeck/workflow/task"
)

type bundle struct {
	db                            *pgxpool.Pool
	st                            *store.Store
	hub                           *notify.Hub
	alice, bob, carol, dave, erin *auth.User
	smtp                          *smtpServer
	team                          []string
}

// setup: team acme with alice (approver), bob (approver), carol (admin),
// dave (deployer), erin (viewer), and an SMTP server.
func setup(t *testing.T) *bundle {
	t.Helper()
	db := dbtest.DB(t)
	st := store.New(db)
	b := &bundle{db: db, st: st, hub: notify.NewHub(), smtp: newSMTPServer(t)}
	b.alice = testfactory.User(t, st, "alice@acme.test", "acme", auth.RoleApprover)
	b.bob = testfactory.User(t, st, "bob@acme.test", "acme", auth.RoleApprover)
	b.carol = testfactory.User(t, st, "carol@acme.test", "acme", auth.RoleAdmin)
	b.dave = testfactory.User(t, st, "dave@acme.test", "acme", auth.RoleDeployer)
	b.erin = testfactory.User(t, st, "erin@acme.test", "acme", auth.RoleViewer)
	b.team = []string{b.alice.Memberships[0].TeamID}
	// The mail cursor starts where the outbox is now (as on a first serve):
	// fix it before the events the test makes.
	_, err := st.OutboxRead(t.Context(), mail.ConsumerName, nil, 1)
	require.NoError(t, err)
	return b
}

func (b *bundle) config(t *testing.T) mail.Config {
	return mail.Config{
		Server:  mail.Server{Host: "127.0.0.1", Port: b.smtp.port, From: "flightdeck <flightdeck@acme.test>"},
		Timeout: 2 * time.Second, Poll: 20 * time.Millisecond, BaseURL: "http://127.0.0.1:8080/",
		Schedule: mail.Schedule{Steps: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}, Every: 30 * time.Millisecond, MaxAge: time.Minute},
		Logger:   slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

// run runs the service until the returned stop is called (or the test ends).
func (b *bundle) run(t *testing.T, cfg mail.Config) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = mail.New(b.st, b.hub, cfg).Run(ctx); close(done) }()
	var once bool
	stop = func() {
		if !once {
			once = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

func (b *bundle) token(t *testing.T, id string) string {
	t.Helper()
	cs, err := b.st.TaskClaim(t.Context(), "test", 100, time.Minute)
	require.NoError(t, err)
	for _, c := range cs {
		if c.Task.ID == id {
			return c.Task.LeaseToken
		}
	}
	t.Fatalf("task %s not claimed", id)
	return ""
}

func (b *bundle) write(t *testing.T, w store.TaskWrite) {
	t.Helper()
	written, err := b.st.TaskWrites(t.Context(), []store.TaskWrite{w})
	require.NoError(t, err)
	require.Len(t, written, 1)
}

func ev(typ task.EventType, msg string, data any) task.Event {
	raw, _ := json.Marshal(data)
	return task.Event{Type: typ, Status: task.StatusLog, Message: msg, Data: raw}
}

// failedDecision parks a task of u paused on a failed step (guided failure).
func (b *bundle) failedDecision(t *testing.T, u *auth.User, stepErr string) *task.Task {
	tk := testfactory.Task(t, b.st, u, nil)
	b.write(t, store.TaskWrite{ID: tk.ID, Token: b.token(t, tk.ID), State: task.StatePaused, Release: true,
		Events: []task.Event{ev(task.EventTaskPaused, "Step deploy failed", map[string]any{"state": "paused",
			"failed_step": map[string]any{"name": "deploy", "error": stepErr, "attempt": 3}})}})
	return tk
}

// needsAttention ends a task of u in needs_attention.
func (b *bundle) needsAttention(t *testing.T, u *auth.User) *task.Task {
	tk := testfactory.Task(t, b.st, u, nil)
	tok := b.token(t, tk.ID)
	b.write(t, store.TaskWrite{ID: tk.ID, Token: tok, State: task.StateCompensating,
		Events: []task.Event{ev(task.EventTaskState, "compensating", map[string]any{"state": "compensating"})}})
	b.write(t, store.TaskWrite{ID: tk.ID, Token: tok, State: task.StateNeedsAttention, Release: true,
		Events: []task.Event{ev(task.EventTaskState, "needs attention", map[string]any{"state": "needs_attention", "error": "undo failed"})}})
	return tk
}

// failed ends a task of u failed with errText.
func (b *bundle) failed(t *testing.T, u *auth.User, errText string) *task.Task {
	tk := testfactory.Task(t, b.st, u, nil)
	b.write(t, store.TaskWrite{ID: tk.ID, Token: b.token(t, tk.ID), State: task.StateFailed, Release: true, Error: &errText,
		Events: []task.Event{ev(task.EventTaskFailed, "Task failed", map[string]any{"state": "failed", "error": errText})}})
	return tk
}

// eventually polls cond until it holds or 15 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling, not synchronising
	}
}

func (b *bundle) deliveries(t *testing.T) []store.MailDelivery {
	ds, err := b.st.MailDeliveryList(t.Context(), b.team, 1000)
	require.NoError(t, err)
	return ds
}

func (b *bundle) allSettled(t *testing.T, n int) func() bool {
	return func() bool {
		ds := b.deliveries(t)
		if len(ds) != n {
			return false
		}
		for _, d := range ds {
			if d.State == "pending" {
				return false
			}
		}
		return true
	}
}

func sorted(s []string) []string { slices.Sort(s); return s }

// TestRecipients: each event reaches exactly the people §12 names, never
// the creator of an approval, and a person's choices are honoured.
func TestRecipients(t *testing.T) {
	b := setup(t)
	ctx := t.Context()
	// bob takes no decision emails: he must still get the approval one.
	_, err := b.st.NotifySet(ctx, b.bob.ID, map[string]bool{"decision": false})
	require.NoError(t, err)

	approval := testfactory.Task(t, b.st, b.alice, nil) // alice asks: never mailed about it
	testfactory.AwaitingApproval(t, b.st, approval.ID, []string{"approver", "admin"})
	tool := testfactory.Task(t, b.st, b.dave, nil) // an agent's tool call: admins only
	testfactory.AwaitingApprovalOf(t, b.st, tool.ID, []string{"admin"}, "tool_call")
	decision := b.failedDecision(t, b.dave, "exit 1")
	attention := b.needsAttention(t, b.dave)
	failed := b.failed(t, b.dave, "health check failed")
	byOther := testfactory.Task(t, b.st, b.dave, nil)
	_, err = b.st.TaskCancel(ctx, b.team, byOther.ID, "carol@acme.test")
	require.NoError(t, err)
	byOwn := testfactory.Task(t, b.st, b.dave, nil)
	_, err = b.st.TaskCancel(ctx, b.team, byOwn.ID, "dave@acme.test")
	require.NoError(t, err)

	b.run(t, b.config(t))
	want := map[string][]string{
		"bob@acme.test":   {"approval " + approval.ID},
		"carol@acme.test": {"approval " + approval.ID, "approval " + tool.ID, "decision " + decision.ID, "attention " + attention.ID},
		"alice@acme.test": {"decision " + decision.ID},
		"dave@acme.test":  {"decision " + decision.ID, "ended " + failed.ID, "ended " + byOther.ID},
	}
	total := 0
	for _, v := range want {
		total += len(v)
	}
	eventually(t, "every email sent", b.allSettled(t, total))
	got := map[string][]string{}
	for _, d := range b.deliveries(t) {
		require.Equal(t, "sent", d.State, "%+v", d)
		got[d.Recipient] = append(got[d.Recipient], d.Kind+" "+d.TaskID)
	}
	for k := range want {
		require.Equal(t, sorted(want[k]), sorted(got[k]), k)
	}
	require.Len(t, got, len(want), "nobody else (erin the viewer) gets email")
	eventually(t, "the server got them", func() bool { return len(b.smtp.messages()) == total })
	for _, m := range b.smtp.messages() {
		require.Len(t, m.to, 1, "one person per email")
		require.Equal(t, "flightdeck@acme.test", m.from)
		subj := m.msg.Header.Get("Subject")
		require.True(t, strings.HasPrefix(subj, "[flightdeck] "), subj)
		require.Contains(t, m.msg.Header.Get("Content-Type"), "multipart/alternative")
		require.Contains(t, string(m.raw), "Content-Type: text/plain")
		require.Contains(t, string(m.raw), "Content-Type: text/html")
		if m.to[0] == "bob@acme.test" {
			require.Contains(t, subj, "needs your approval")
			require.Contains(t, string(m.raw), "http://127.0.0.1:8080/approvals")
			require.Contains(t, string(m.raw), "Asked by: alice@acme.test")
		}
	}
}

// TestOnceAcrossRestart: the service stopped mid-way and started again,
// its outbox cursor even set back to before the events (a crash before it
// moved), sends each email once.
func TestOnceAcrossRestart(t *testing.T) {
	b := setup(t)
	release := make(chan struct{})
	b.smtp.mu.Lock()
	b.smtp.answer = func(n int) error {
		if n > 2 {
			<-release // the first two go through; the rest wait for the restart
		}
		return nil
	}
	b.smtp.mu.Unlock()
	for range 3 {
		b.failedDecision(t, b.dave, "exit 1") // each: dave, alice, bob, carol
	}
	stop := b.run(t, b.config(t))
	eventually(t, "two emails sent", func() bool { return len(b.smtp.messages()) >= 2 })
	close(release)
	stop()
	_, err := b.db.Exec(t.Context(), `UPDATE outbox_cursors SET txid = '0'::xid8, task_id = '00000000-0000-0000-0000-000000000000', seq = 0 WHERE name = $1`, mail.ConsumerName)
	require.NoError(t, err)
	cfg := b.config(t)
	b.run(t, cfg)
	eventually(t, "every email sent", b.allSettled(t, 12))
	// Stopped mid-send, an email may have reached the server and not been
	// recorded (at least once): the Message-ID lets a reader's client fold
	// that; the table says sent once per (event, person).
	seen := map[string]int{}
	for _, m := range b.smtp.messages() {
		seen[m.msg.Header.Get("Message-Id")+" "+m.to[0]]++
	}
	require.Len(t, seen, 12)
	for k, n := range seen {
		require.Equal(t, 1, n, k)
	}
}

// TestRetryAfterServerDown: the server refuses (4xx) then is down, then
// takes the email; a 5xx for one address is recorded and not retried.
func TestRetryAfterServerDown(t *testing.T) {
	b := setup(t)
	b.smtp.mu.Lock()
	b.smtp.answer = func(n int) error {
		if n <= 2 {
			return &smtp.SMTPError{Code: 451, Message: "try again later"}
		}
		return nil
	}
	b.smtp.rcpt = func(to string) error {
		if to == "dave@acme.test" {
			return &smtp.SMTPError{Code: 550, Message: "no such mailbox"}
		}
		return nil
	}
	b.smtp.mu.Unlock()
	b.failed(t, b.dave, "boom") // dave: 550, given up at once
	appr := testfactory.Task(t, b.st, b.dave, nil)
	testfactory.AwaitingApproval(t, b.st, appr.ID, []string{"admin"}) // carol: 451 twice, then sent
	cfg := b.config(t)
	b.run(t, cfg)
	eventually(t, "both settled", b.allSettled(t, 2))
	for _, d := range b.deliveries(t) {
		switch d.Recipient {
		case "dave@acme.test":
			require.Equal(t, "failed", d.State)
			require.Equal(t, 1, d.Attempts, "a 5xx is not retried")
			require.Contains(t, *d.LastError, "550")
		case "carol@acme.test":
			require.Equal(t, "sent", d.State)
			require.Equal(t, 3, d.Attempts)
		}
	}
}

// TestServerDownThenUp: nothing listens at first (connection refused);
// once a server is there the email goes.
func TestServerDownThenUp(t *testing.T) {
	b := setup(t)
	cfg := b.config(t)
	_ = b.smtp.srv.Close() // nobody home on that port
	b.failed(t, b.dave, "boom")
	b.run(t, cfg)
	eventually(t, "a failed attempt", func() bool {
		ds := b.deliveries(t)
		return len(ds) == 1 && ds[0].Attempts >= 2 && ds[0].State == "pending" && ds[0].LastError != nil
	})
	// Serve again on the first server's port.
	srv2 := newSMTPServerAt(t, b.smtp.addr)
	eventually(t, "sent once the server is up", b.allSettled(t, 1))
	require.Equal(t, "sent", b.deliveries(t)[0].State)
	require.Len(t, srv2.messages(), 1)
}

// TestHangTimedOut: a server that accepts and never answers is given up
// on after the timeout, and the email is retried.
func TestHangTimedOut(t *testing.T) {
	b := setup(t)
	ln := listenHang(t)
	cfg := b.config(t)
	cfg.Server.Port = ln
	cfg.Timeout = 200 * time.Millisecond
	b.failed(t, b.dave, "boom")
	b.run(t, cfg)
	eventually(t, "a timed-out attempt", func() bool {
		ds := b.deliveries(t)
		return len(ds) == 1 && ds[0].LastError != nil && ds[0].State == "pending"
	})
	require.Contains(t, *b.deliveries(t)[0].LastError, "timeout")
}

// TestNoHeaderInjection: CR/LF in a task's pipeline, error, params and a
// cancel's actor never reach a header.
func TestNoHeaderInjection(t *testing.T) {
	b := setup(t)
	evil := "x\r\nBcc: evil@attacker.test\r\nX-Injected: yes"
	tk := testfactory.Task(t, b.st, b.dave, &testfactory.TaskOpts{Pipeline: "web" + evil,
		Params: json.RawMessage(`{"app":"shop\r\nBcc: evil@attacker.test","version":"1.0\nX-Injected: 1"}`)})
	_, err := b.st.TaskCancel(t.Context(), b.team, tk.ID, "carol"+evil)
	require.NoError(t, err)
	b.failedDecision(t, b.dave, "step"+evil)
	b.run(t, b.config(t))
	eventually(t, "sent", b.allSettled(t, 5))
	eventually(t, "received", func() bool { return len(b.smtp.messages()) == 5 })
	for _, m := range b.smtp.messages() {
		// Every header line is a known header or a folded continuation
		// (starting with a space): nothing the fields carried starts one.
		for _, line := range strings.Split(header(m.raw), "\n") {
			if strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") {
				continue
			}
			name, _, _ := strings.Cut(line, ":")
			require.Contains(t, []string{"Auto-Submitted", "Date", "MIME-Version", "Message-ID", "Subject", "From", "To", "Content-Type"}, name, line)
		}
		require.Empty(t, m.msg.Header.Get("Bcc"))
		require.Empty(t, m.msg.Header.Get("X-Injected"))
		require.Len(t, m.to, 1)
		require.NotEqual(t, "evil@attacker.test", m.to[0])
	}
}
