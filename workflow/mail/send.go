package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	gomail "github.com/wneessen/go-mail"

	"flightdeck/internal/backoff"
	"flightdeck/store"
)

// Server is where email goes (internal/config.MailConfig, copied so this
// package does not need the config's other parts).
type Server struct {
	Host               string
	Port               int
	Username, Password string
	TLS                bool // smtps: TLS from the first byte; else STARTTLS when offered
	From               string
	// TLSConfig overrides the TLS settings (tests); nil verifies the host.
	TLSConfig *tls.Config
}

// Schedule is the retry backoff: about 10 s, 1 min, 5 min, 15 min, then
// every hour, for up to 24 h (contract §12), each jittered.
type Schedule struct {
	Steps  []time.Duration
	Every  time.Duration
	MaxAge time.Duration
}

func (s Schedule) withDefaults() Schedule {
	if len(s.Steps) == 0 {
		s.Steps = []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute}
	}
	if s.Every <= 0 {
		s.Every = time.Hour
	}
	if s.MaxAge <= 0 {
		s.MaxAge = 24 * time.Hour
	}
	return s
}

// Delay is the wait after failed attempt n (1-based), jittered.
func (s Schedule) Delay(n int) time.Duration {
	d := s.Every
	if n >= 1 && n <= len(s.Steps) {
		d = s.Steps[n-1]
	}
	return backoff.Jitter(d)
}

// sender claims due emails and hands them to the SMTP server, one
// connection per email (few emails; no pool to go stale).
type sender struct {
	st       *store.Store
	srv      Server
	schedule Schedule
	timeout  time.Duration
	poll     time.Duration
	slots    chan struct{}
	wake     chan struct{}
	logger   *slog.Logger
}

func (s *sender) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run sends due emails until ctx ends, then waits for the attempts in
// flight (a cancelled attempt's email is claimed again once its lease
// passes: at least once).
func (s *sender) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	for {
		if free := cap(s.slots) - len(s.slots); free > 0 {
			ms, err := s.st.MailClaim(ctx, free, s.lease())
			if err != nil && ctx.Err() == nil {
				s.logger.Warn("Could not claim emails", "error", err)
			}
			for _, m := range ms {
				s.slots <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.attempt(ctx, m)
					<-s.slots
					s.Wake()
				}()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-tick.C:
		}
	}
}

func (s *sender) attempt(ctx context.Context, m store.MailClaimed) {
	err := s.send(ctx, m)
	if err != nil && ctx.Err() != nil {
		return // shutting down mid-attempt: the lease brings it back
	}
	// A sent email is recorded even while shutting down: otherwise the
	// lease would bring it back and send it a second time.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	o := store.MailOutcome{ID: m.ID, ClaimToken: m.ClaimToken, MaxAge: s.schedule.MaxAge}
	switch {
	case err == nil:
		o.Sent = true
	case permanent(err):
		o.Permanent, o.Error = true, errWords(err)
	default:
		o.Error, o.RetryIn = errWords(err), s.schedule.Delay(m.Attempt)
	}
	if rerr := s.st.MailRecord(ctx, o); rerr != nil {
		s.logger.Warn("Could not record email attempt", "mail_id", m.ID, "error", rerr)
		return
	}
	level := slog.LevelDebug
	if !o.Sent {
		level = slog.LevelInfo
	}
	s.logger.Log(ctx, level, "Email attempt", "mail_id", m.ID, "task_id", m.TaskID, "attempt", m.Attempt, "error", o.Error)
}

// lease is how long a claim keeps an email from others: past the attempt's
// timeout, so a live attempt is never sent twice, and short enough that a
// process that died mid-send delays its emails little.
func (s *sender) lease() time.Duration { return 2*s.timeout + time.Second }

// message builds the MIME message: text/plain with a text/html
// alternative. The Message-ID is the delivery's, the same on every retry.
func (s *sender) message(m store.MailClaimed) (*gomail.Msg, error) {
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	if err := msg.From(s.srv.From); err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	if err := msg.To(m.Recipient); err != nil {
		return nil, fmt.Errorf("recipient: %w", err)
	}
	msg.Subject(OneLine(m.Subject)) // stored one-line already; a second fence
	msg.SetMessageIDWithValue(m.ID + "@flightdeck")
	msg.SetDateWithValue(m.CreatedAt)
	msg.SetGenHeader(gomail.Header("Auto-Submitted"), "auto-generated")
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	return msg, nil
}

func (s *sender) send(ctx context.Context, m store.MailClaimed) error {
	msg, err := s.message(m)
	if err != nil {
		return permanentErr{err}
	}
	opts := []gomail.Option{gomail.WithPort(s.srv.Port), gomail.WithTimeout(s.timeout)}
	if s.srv.TLS {
		opts = append(opts, gomail.WithSSL())
	} else {
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if s.srv.TLSConfig != nil {
		opts = append(opts, gomail.WithTLSConfig(s.srv.TLSConfig))
	}
	if s.srv.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(s.srv.Username), gomail.WithPassword(s.srv.Password))
	}
	c, err := gomail.NewClient(s.srv.Host, opts...)
	if err != nil {
		return permanentErr{err}
	}
	actx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return c.DialAndSendWithContext(actx, msg)
}

// permanentErr is a failure no retry mends (a malformed address).
type permanentErr struct{ error }

// permanent: the server answered 5xx (it will not take this email, e.g.
// an address it does not know), or the message could not be built.
func permanent(err error) bool {
	var p permanentErr
	if errors.As(err, &p) {
		return true
	}
	var se *gomail.SendError
	if errors.As(err, &se) {
		return !se.IsTemp() && se.ErrorCode() >= 500
	}
	return false
}

// errWords is the last error as admins see it: one line, no password
// (go-mail never quotes it; the URL is never in an error).
func errWords(err error) string {
	msg := OneLine(err.Error())
	if errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "i/o timeout") {
		msg = "timed out: " + msg
	}
	return cut(msg, 500)
}
