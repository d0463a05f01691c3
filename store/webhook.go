package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Webhook is a team's subscription. Secret is only ever returned to the
// dispatcher and, once, to its creator.
type Webhook struct {
	ID     string   `json:"id"`
	TeamID string   `json:"-"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	// Format is the body: "standard" (Standard Webhooks JSON) or "slack"
	// (an incoming-webhook message, contract §12).
	Format         string     `json:"format"`
	Secret         string     `json:"-"`
	CreatedAt      time.Time  `json:"created_at"`
	DisabledAt     *time.Time `json:"disabled_at"`
	DisabledReason *string    `json:"disabled_reason"`
}

// WebhookCreateParams are the inputs of WebhookCreate.
type WebhookCreateParams struct {
	TeamID, URL, Secret, CreatedByID, Format string
	Events                                   []string
}

const webhookCols = `id::text, team_id::text, url, events, format, secret, created_at, disabled_at, disabled_reason`

func scanWebhook(row pgx.Row) (*Webhook, error) {
	var w Webhook
	if err := row.Scan(&w.ID, &w.TeamID, &w.URL, &w.Events, &w.Format, &w.Secret, &w.CreatedAt, &w.DisabledAt, &w.DisabledReason); err != nil {
		return nil, interpretError(err)
	}
	utc(&w.CreatedAt)
	if w.DisabledAt != nil {
		utc(w.DisabledAt)
	}
	return &w, nil
}

// WebhookCreate stores a team subscription.
func (s *Store) WebhookCreate(ctx context.Context, p WebhookCreateParams) (*Webhook, error) {
	var by any
	if p.CreatedByID != "" {
		by = p.CreatedByID
	}
	format := p.Format
	if format == "" {
		format = "standard"
	}
	return scanWebhook(s.pool.QueryRow(ctx, `
		INSERT INTO webhooks (team_id, url, events, secret, created_by, format) VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING `+webhookCols, p.TeamID, p.URL, p.Events, p.Secret, by, format))
}

// WebhookList returns the subscriptions of teamIDs, newest first.
func (s *Store) WebhookList(ctx context.Context, teamIDs []string) ([]*Webhook, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE team_id = ANY($1) ORDER BY created_at DESC, id`, teamIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []*Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, interpretError(rows.Err())
}

// WebhookGet returns one subscription of teamIDs, or ErrNotFound.
func (s *Store) WebhookGet(ctx context.Context, teamIDs []string, id string) (*Webhook, error) {
	if !validUUID(id) {
		return nil, ErrNotFound
	}
	return scanWebhook(s.pool.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = $1 AND team_id = ANY($2)`, id, teamIDs))
}

// WebhookDelete removes a subscription and its delivery log.
func (s *Store) WebhookDelete(ctx context.Context, teamIDs []string, id string) error {
	if !validUUID(id) {
		return ErrNotFound
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhooks WHERE id = $1 AND team_id = ANY($2)`, id, teamIDs)
	if err != nil {
		return interpretError(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// WebhookActive returns the enabled subscriptions of teamIDs (dispatcher).
func (s *Store) WebhookActive(ctx context.Context, teamIDs []string) ([]*Webhook, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE team_id = ANY($1) AND disabled_at IS NULL`, teamIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []*Webhook
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, interpretError(rows.Err())
}

// TaskWebhookURLs returns the webhook URL of each of taskIDs that has one.
func (s *Store) TaskWebhookURLs(ctx context.Context, taskIDs []string) (map[string]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id::text, webhook->>'url' FROM tasks
		WHERE id = ANY($1::uuid[]) AND webhook IS NOT NULL AND webhook->>'url' <> ''`, taskIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, u string
		if err := rows.Scan(&id, &u); err != nil {
			return nil, interpretError(err)
		}
		out[id] = u
	}
	return out, interpretError(rows.Err())
}

// WebhookDeliveryParams are one message to enqueue.
type WebhookDeliveryParams struct {
	ID        string // the webhook-id: deterministic per (target, task, seq)
	TeamID    string
	WebhookID string // "" for the task's own webhook
	TaskID    string
	Seq       int
	EventType string
	URL       string
	Body      []byte
}

// WebhookDeliveryEnqueue inserts deliveries; ids already present are left
// alone, which makes enqueueing an event again harmless. It returns how many
// were new.
func (s *Store) WebhookDeliveryEnqueue(ctx context.Context, ds []WebhookDeliveryParams) (int, error) {
	if len(ds) == 0 {
		return 0, nil
	}
	var b pgx.Batch
	for _, d := range ds {
		var wid any
		if d.WebhookID != "" {
			wid = d.WebhookID
		}
		b.Queue(`
			INSERT INTO webhook_deliveries (id, team_id, webhook_id, task_id, seq, event_type, url, body)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
			d.ID, d.TeamID, wid, d.TaskID, d.Seq, d.EventType, d.URL, d.Body)
	}
	n := 0
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var err error
		n, err = execCounting(ctx, tx, &b)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("error enqueueing webhook deliveries: %w", err)
	}
	return n, nil
}

// WebhookDeliveryClaimed is a delivery claimed for one attempt.
type WebhookDeliveryClaimed struct {
	ID, WebhookID, TaskID, URL, ClaimToken string
	Body                                   []byte
	Secret                                 string // signing secret (whsec_… or the task's own)
	Attempt                                int    // 1 for the first attempt
	// Traceparent is the task's submit trace context ("" for none): the
	// delivery's span links to it.
	Traceparent string
}

// WebhookDeliveryClaim claims up to limit due deliveries. The claim is one
// short statement (SKIP LOCKED, so several processes share the work) that
// pushes next_attempt_at lease into the future and sets a new claim token:
// no transaction stays open while the request is in flight, and a process
// that dies mid-send leaves the delivery due again once the lease passes.
func (s *Store) WebhookDeliveryClaim(ctx context.Context, limit int, lease time.Duration) ([]WebhookDeliveryClaimed, error) {
	rows, err := s.pool.Query(ctx, `
		WITH due AS (
			SELECT id FROM webhook_deliveries
			WHERE state = 'pending' AND next_attempt_at <= now()
			ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
		UPDATE webhook_deliveries d
		SET claim_token = gen_random_uuid(), attempts = d.attempts + 1,
		    next_attempt_at = now() + $2::bigint * interval '1 microsecond', last_attempt_at = now()
		FROM due WHERE d.id = due.id
		RETURNING d.id, COALESCE(d.webhook_id::text, ''), d.task_id::text, d.url, d.claim_token::text, d.body, d.attempts,
			COALESCE(CASE WHEN d.webhook_id IS NULL
				THEN (SELECT t.webhook->>'secret' FROM tasks t WHERE t.id = d.task_id)
				ELSE (SELECT w.secret FROM webhooks w WHERE w.id = d.webhook_id) END, ''),
			COALESCE((SELECT t.traceparent FROM tasks t WHERE t.id = d.task_id), '')`,
		limit, lease.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("error claiming webhook deliveries: %w", interpretError(err))
	}
	defer rows.Close()
	var out []WebhookDeliveryClaimed
	for rows.Next() {
		var d WebhookDeliveryClaimed
		if err := rows.Scan(&d.ID, &d.WebhookID, &d.TaskID, &d.URL, &d.ClaimToken, &d.Body, &d.Attempt, &d.Secret, &d.Traceparent); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, d)
	}
	return out, interpretError(rows.Err())
}

// WebhookDeliveryOutcome is the result of one attempt.
type WebhookDeliveryOutcome struct {
	ID, ClaimToken string
	Status         int    // HTTP status; 0 when there was no answer
	Error          string // "" on success
	Succeeded      bool
	// Gone (410): the endpoint asked to stop. A team subscription is
	// disabled and its pending deliveries fail; a task's webhook just stops.
	Gone bool
	// RetryIn is the delay before the next attempt; the delivery fails
	// instead when that falls after its window's end (window_start+MaxAge).
	RetryIn, MaxAge time.Duration
}

// ErrClaimLost: the delivery was claimed again since (this attempt outlived
// its lease); its outcome was not recorded.
var ErrClaimLost = errors.New("webhook delivery claim lost")

// WebhookDeliveryRecord records an attempt's outcome under its claim token.
func (s *Store) WebhookDeliveryRecord(ctx context.Context, o WebhookDeliveryOutcome) error {
	var status any
	if o.Status != 0 {
		status = o.Status
	}
	return s.withTx(ctx, func(tx pgx.Tx) error {
		var webhookID *string
		err := tx.QueryRow(ctx, `
			UPDATE webhook_deliveries SET
				claim_token = NULL, last_status = $3, last_error = NULLIF($4, ''),
				state = CASE WHEN $5 THEN 'succeeded'
				             WHEN $6 THEN 'failed'
				             WHEN window_start + $8::bigint * interval '1 microsecond'
				                  < now() + $7::bigint * interval '1 microsecond' THEN 'failed'
				             ELSE 'pending' END,
				delivered_at = CASE WHEN $5 THEN now() END,
				next_attempt_at = now() + $7::bigint * interval '1 microsecond'
			WHERE id = $1 AND claim_token = $2::uuid
			RETURNING webhook_id::text`,
			o.ID, o.ClaimToken, status, o.Error, o.Succeeded, o.Gone, o.RetryIn.Microseconds(), o.MaxAge.Microseconds()).Scan(&webhookID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrClaimLost
		}
		if err != nil {
			return interpretError(err)
		}
		if !o.Gone || webhookID == nil {
			return nil
		}
		if _, err := tx.Exec(ctx, `
			UPDATE webhooks SET disabled_at = now(), disabled_reason = 'the endpoint answered 410 Gone'
			WHERE id = $1 AND disabled_at IS NULL`, *webhookID); err != nil {
			return interpretError(err)
		}
		_, err = tx.Exec(ctx, `
			UPDATE webhook_deliveries SET state = 'failed', last_error = 'subscription disabled: the endpoint answered 410 Gone'
			WHERE webhook_id = $1 AND state = 'pending'`, *webhookID)
		return interpretError(err)
	})
}

// WebhookDelivery is one line of a subscription's delivery log.
type WebhookDelivery struct {
	ID            string     `json:"id"`
	TaskID        string     `json:"task_id"`
	Seq           int        `json:"seq"`
	Event         string     `json:"event"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	LastAttemptAt *time.Time `json:"last_attempt_at"`
	LastStatus    *int       `json:"last_status"`
	LastError     *string    `json:"last_error"`
	DeliveredAt   *time.Time `json:"delivered_at"`
	CreatedAt     time.Time  `json:"created_at"`
}

// WebhookDeliveryList returns a subscription's deliveries, newest first, at
// most limit (default 100). The subscription must belong to teamIDs.
func (s *Store) WebhookDeliveryList(ctx context.Context, teamIDs []string, webhookID string, limit int) ([]WebhookDelivery, error) {
	if !validUUID(webhookID) {
		return nil, ErrNotFound
	}
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `
		SELECT d.id, d.task_id::text, d.seq, d.event_type, d.state, d.attempts,
		       CASE WHEN d.state = 'pending' THEN d.next_attempt_at END,
		       d.last_attempt_at, d.last_status, d.last_error, d.delivered_at, d.created_at
		FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
		WHERE d.webhook_id = $1 AND w.team_id = ANY($2)
		ORDER BY d.created_at DESC, d.id LIMIT $3`, webhookID, teamIDs, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []WebhookDelivery{}
	for rows.Next() {
		var d WebhookDelivery
		if err := rows.Scan(&d.ID, &d.TaskID, &d.Seq, &d.Event, &d.State, &d.Attempts, &d.NextAttemptAt,
			&d.LastAttemptAt, &d.LastStatus, &d.LastError, &d.DeliveredAt, &d.CreatedAt); err != nil {
			return nil, interpretError(err)
		}
		for _, tp := range []*time.Time{d.NextAttemptAt, d.LastAttemptAt, d.DeliveredAt, &d.CreatedAt} {
			if tp != nil {
				utc(tp)
			}
		}
		out = append(out, d)
	}
	return out, interpretError(rows.Err())
}

// WebhookDeliveryRedeliver queues a delivery of a subscription of teamIDs
// again at once, with the same webhook-id (receivers deduplicate by it) and
// a fresh retry window. A subscription disabled by a 410 is enabled again:
// asking for a redelivery says the endpoint is back.
func (s *Store) WebhookDeliveryRedeliver(ctx context.Context, teamIDs []string, webhookID, deliveryID string) error {
	if !validUUID(webhookID) {
		return ErrNotFound
	}
	return s.withTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE webhook_deliveries d SET state = 'pending', attempts = 0, claim_token = NULL,
				window_start = now(), next_attempt_at = now(), delivered_at = NULL
			FROM webhooks w
			WHERE d.id = $1 AND d.webhook_id = $2 AND w.id = d.webhook_id AND w.team_id = ANY($3)`,
			deliveryID, webhookID, teamIDs)
		if err != nil {
			return interpretError(err)
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		_, err = tx.Exec(ctx, `UPDATE webhooks SET disabled_at = NULL, disabled_reason = NULL WHERE id = $1`, webhookID)
		return interpretError(err)
	})
}

// WebhookDeliveryPrune deletes up to limit deliveries that ended (succeeded
// or failed for good) before now - olderThan and returns how many it
// deleted. No ORDER BY: the statement stops at the first limit rows the
// index yields instead of sorting a large backlog. A delivery's id is derived from its event, and the
// outbox cursor passed that event when the delivery was enqueued, so a
// pruned delivery is never enqueued again; it just leaves the log (and can
// no longer be redelivered). SKIP LOCKED: several processes pruning at once
// split the rows, and a delivery being redelivered is left alone.
func (s *Store) WebhookDeliveryPrune(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM webhook_deliveries WHERE id IN (
			SELECT id FROM webhook_deliveries
			WHERE state <> 'pending'
				AND COALESCE(delivered_at, last_attempt_at, created_at) < now() - make_interval(secs => $1)
			LIMIT $2
			FOR UPDATE SKIP LOCKED)`, olderThan.Seconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("error pruning webhook deliveries: %w", interpretError(err))
	}
	return int(tag.RowsAffected()), nil
}
