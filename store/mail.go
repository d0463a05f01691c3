package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// NotifyKinds are the kinds of email a person may turn off (contract §12).
var NotifyKinds = []string{"approval", "decision", "attention", "ended"}

// NotifyPrefs are a person's email choices: kind → on. Every kind of
// NotifyKinds is present (a kind never set is on).
type NotifyPrefs map[string]bool

func prefsOf(raw []byte) NotifyPrefs {
	stored := map[string]bool{}
	_ = json.Unmarshal(raw, &stored) // the column only ever holds what NotifySet wrote
	out := NotifyPrefs{}
	for _, k := range NotifyKinds {
		on, ok := stored[k]
		out[k] = !ok || on
	}
	return out
}

// NotifyGet returns a person's email choices.
func (s *Store) NotifyGet(ctx context.Context, userID string) (NotifyPrefs, error) {
	var raw []byte
	if err := s.pool.QueryRow(ctx, `SELECT notify_email FROM users WHERE id = $1`, userID).Scan(&raw); err != nil {
		return nil, interpretError(err)
	}
	return prefsOf(raw), nil
}

// NotifySet merges choices into a person's (kinds not named keep theirs)
// and returns the result.
func (s *Store) NotifySet(ctx context.Context, userID string, prefs map[string]bool) (NotifyPrefs, error) {
	b, err := json.Marshal(prefs)
	if err != nil {
		return nil, err
	}
	var raw []byte
	if err := s.pool.QueryRow(ctx, `UPDATE users SET notify_email = notify_email || $2::jsonb WHERE id = $1
		RETURNING notify_email`, userID, b).Scan(&raw); err != nil {
		return nil, interpretError(err)
	}
	return prefsOf(raw), nil
}

// MailPerson is someone an email may go to: a member of the task's team
// (Role set) or its creator (Role "" once no longer a member).
type MailPerson struct {
	UserID string `db:"id"`
	Email  string `db:"email"`
	Role   string `db:"role"`
	Raw    []byte `db:"notify_email"`
}

// Wants reports whether the person takes email of kind.
func (p MailPerson) Wants(kind string) bool { return prefsOf(p.Raw)[kind] }

// MailPeople returns the members of teamID and the user creatorID (who may
// have left the team), each once.
func (s *Store) MailPeople(ctx context.Context, teamID, creatorID string) ([]MailPerson, error) {
	var creator any
	if creatorID != "" {
		creator = creatorID
	}
	return byName[MailPerson](s.pool.Query(ctx, `
		SELECT u.id::text, u.email, COALESCE(m.role, '') AS role, u.notify_email
		FROM users u LEFT JOIN memberships m ON m.user_id = u.id AND m.team_id = $1
		WHERE m.team_id IS NOT NULL OR u.id = $2::uuid
		ORDER BY u.email`, teamID, creator))
}

// MailParams is one email to enqueue.
type MailParams struct {
	TeamID, TaskID, UserID string
	Seq                    int
	Kind, Recipient        string
	Subject, Text, HTML    string
}

// MailEnqueue inserts emails; one already present for its (event, person)
// is left alone, so handling an event again sends nothing twice. It
// returns how many were new.
func (s *Store) MailEnqueue(ctx context.Context, ms []MailParams) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	n := 0
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, m := range ms {
			b.Queue(`INSERT INTO mail_deliveries (team_id, task_id, seq, user_id, kind, recipient, subject, text_body, html_body)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (task_id, seq, user_id) DO NOTHING`,
				m.TeamID, m.TaskID, m.Seq, m.UserID, m.Kind, m.Recipient, m.Subject, m.Text, m.HTML)
		}
		var err error
		n, err = execCounting(ctx, tx, &b)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("error enqueueing emails: %w", err)
	}
	return n, nil
}

// MailClaimed is an email claimed for one attempt.
type MailClaimed struct {
	ID         string    `db:"id"`
	TaskID     string    `db:"task_id"`
	Seq        int       `db:"seq"`
	Recipient  string    `db:"recipient"`
	Subject    string    `db:"subject"`
	Text       string    `db:"text_body"`
	HTML       string    `db:"html_body"`
	Attempt    int       `db:"attempts"`
	ClaimToken string    `db:"claim_token"`
	CreatedAt  time.Time `db:"created_at"`
}

// MailClaim claims up to limit due emails for lease (see WebhookDeliveryClaim:
// no transaction stays open while the SMTP server is talked to).
func (s *Store) MailClaim(ctx context.Context, limit int, lease time.Duration) ([]MailClaimed, error) {
	out, err := byName[MailClaimed](s.pool.Query(ctx, `
		WITH due AS (
			SELECT id FROM mail_deliveries
			WHERE state = 'pending' AND next_attempt_at <= now()
			ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
		UPDATE mail_deliveries d
		SET claim_token = gen_random_uuid(), attempts = d.attempts + 1,
		    next_attempt_at = now() + $2::bigint * interval '1 microsecond', last_attempt_at = now()
		FROM due WHERE d.id = due.id
		RETURNING d.id::text, d.task_id::text, d.seq, d.recipient, d.subject, d.text_body, d.html_body,
			d.attempts, d.claim_token::text, d.created_at`, limit, lease.Microseconds()))
	if err != nil {
		return nil, fmt.Errorf("error claiming emails: %w", err)
	}
	return out, nil
}

// MailOutcome is the result of one attempt.
type MailOutcome struct {
	ID, ClaimToken string
	Error          string // "" when the server took it
	Sent           bool
	Permanent      bool // a 5xx answer: never retried
	// RetryIn is the delay before the next attempt; the email is given up
	// instead when that falls after window_start + MaxAge.
	RetryIn, MaxAge time.Duration
}

// MailRecord records an attempt's outcome under its claim token
// (ErrClaimLost when the email was claimed again since).
func (s *Store) MailRecord(ctx context.Context, o MailOutcome) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE mail_deliveries SET
			claim_token = NULL, last_error = NULLIF($3, ''),
			state = CASE WHEN $4 THEN 'sent'
			             WHEN $5 THEN 'failed'
			             WHEN window_start + $7::bigint * interval '1 microsecond'
			                  < now() + $6::bigint * interval '1 microsecond' THEN 'failed'
			             ELSE 'pending' END,
			sent_at = CASE WHEN $4 THEN now() END,
			next_attempt_at = now() + $6::bigint * interval '1 microsecond'
		WHERE id = $1 AND claim_token = $2::uuid`,
		o.ID, o.ClaimToken, o.Error, o.Sent, o.Permanent, o.RetryIn.Microseconds(), o.MaxAge.Microseconds())
	if err != nil {
		return interpretError(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrClaimLost
	}
	return nil
}

// MailDelivery is one line of the email log admins see.
type MailDelivery struct {
	ID            string     `db:"id" json:"id"`
	TaskID        string     `db:"task_id" json:"task_id"`
	Seq           int        `db:"seq" json:"seq"`
	Kind          string     `db:"kind" json:"kind"`
	Recipient     string     `db:"recipient" json:"recipient"`
	Subject       string     `db:"subject" json:"subject"`
	State         string     `db:"state" json:"state"`
	Attempts      int        `db:"attempts" json:"attempts"`
	NextAttemptAt *time.Time `db:"next_attempt_at" json:"next_attempt_at"`
	LastError     *string    `db:"last_error" json:"last_error"`
	SentAt        *time.Time `db:"sent_at" json:"sent_at"`
	CreatedAt     time.Time  `db:"created_at" json:"created_at"`
}

// MailDeliveryList returns the emails of teamIDs, newest first, at most
// limit (default 100).
func (s *Store) MailDeliveryList(ctx context.Context, teamIDs []string, limit int) ([]MailDelivery, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	out, err := byName[MailDelivery](s.pool.Query(ctx, `
		SELECT id::text, task_id::text, seq, kind, recipient, subject, state, attempts,
			CASE WHEN state = 'pending' THEN next_attempt_at END AS next_attempt_at, last_error, sent_at, created_at
		FROM mail_deliveries WHERE team_id = ANY($1)
		ORDER BY created_at DESC, id LIMIT $2`, teamIDs, limit))
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []MailDelivery{}
	}
	return out, nil
}

// MailDeliveryPrune deletes up to limit emails that ended (sent or given
// up) before now - olderThan (see WebhookDeliveryPrune: the outbox cursor
// passed their events, so none is enqueued again).
func (s *Store) MailDeliveryPrune(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM mail_deliveries WHERE id IN (
			SELECT id FROM mail_deliveries
			WHERE state <> 'pending' AND COALESCE(sent_at, last_attempt_at, created_at) < now() - make_interval(secs => $1)
			LIMIT $2
			FOR UPDATE SKIP LOCKED)`, olderThan.Seconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("error pruning emails: %w", interpretError(err))
	}
	return int(tag.RowsAffected()), nil
}
