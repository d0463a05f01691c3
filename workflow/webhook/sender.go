package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"flightdeck/internal/tracing"
	"flightdeck/store"
)

// Sender claims due deliveries and POSTs them. Each attempt is signed anew
// (the timestamp changes; the webhook-id does not).
type Sender struct {
	st       *store.Store
	client   *http.Client
	schedule Schedule
	poll     time.Duration
	lease    time.Duration
	slots    chan struct{}
	wake     chan struct{}
	logger   *slog.Logger
	now      func() time.Time
}

// NewSender returns a sender; cfg.Guard is required.
func NewSender(st *store.Store, cfg Config) *Sender {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = TimeoutDefault
	}
	n := cfg.Concurrency
	if n <= 0 {
		n = ConcurrencyDefault
	}
	if cfg.Guard == nil {
		cfg.Guard, _ = NewGuard(nil, nil) // no allow-list: cannot fail
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Sender{
		st: st, client: NewClient(cfg.Guard, timeout), schedule: cfg.Schedule.withDefaults(),
		poll: max(cfg.Poll, time.Millisecond), lease: timeout + 30*time.Second,
		slots: make(chan struct{}, n), wake: make(chan struct{}, 1), logger: logger, now: time.Now,
	}
}

// Wake makes the sender look for due deliveries now.
func (s *Sender) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run sends due deliveries until ctx ends, then waits for the attempts in
// flight (which ctx cancels; their deliveries are claimed again once the
// lease passes, with the same webhook-id).
func (s *Sender) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	for {
		free := cap(s.slots) - len(s.slots)
		claimed := 0
		if free > 0 {
			ds, err := s.st.WebhookDeliveryClaim(ctx, free, s.lease)
			if err != nil && ctx.Err() == nil {
				s.logger.Warn("Could not claim webhook deliveries", "error", err)
			}
			claimed = len(ds)
			for _, d := range ds {
				s.slots <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.attempt(ctx, d)
					<-s.slots
					s.Wake() // a slot is free: look again
				}()
			}
		}
		if claimed > 0 && claimed == free {
			// Possibly more due; the next loop waits for a free slot.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-s.wake:
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.wake:
		case <-tick.C:
		}
	}
}

// attempt makes one attempt and records its outcome.
func (s *Sender) attempt(ctx context.Context, d store.WebhookDeliveryClaimed) {
	sctx, span := tracing.StartWebhook(ctx, d.ID, d.TaskID, d.Traceparent, d.Attempt)
	status, err := s.post(sctx, d)
	tracing.EndDelivery(span, status, err)
	if ctx.Err() != nil {
		return // shutting down: the lease brings the delivery back
	}
	o := store.WebhookDeliveryOutcome{ID: d.ID, ClaimToken: d.ClaimToken, Status: status, MaxAge: s.schedule.MaxAge}
	switch {
	case err == nil && status >= 200 && status < 300:
		o.Succeeded = true
	case err == nil && status == http.StatusGone:
		o.Gone, o.Error = true, "410 Gone: endpoint disabled"
	default:
		if err != nil {
			o.Error = err.Error()
		} else {
			o.Error = "answered " + strconv.Itoa(status) + " " + http.StatusText(status)
		}
		o.RetryIn = s.schedule.Delay(d.Attempt)
	}
	if err := s.st.WebhookDeliveryRecord(ctx, o); err != nil {
		s.logger.Warn("Could not record webhook attempt", "delivery_id", d.ID, "error", err)
		return
	}
	level := slog.LevelDebug
	if !o.Succeeded {
		level = slog.LevelInfo
	}
	// Never the URL (it may carry a token) nor anything of the secret.
	s.logger.Log(ctx, level, "Webhook attempt", "delivery_id", d.ID, "task_id", d.TaskID,
		"attempt", d.Attempt, "status", status, "error", o.Error)
}

// post sends the signed request and returns the answer's status.
func (s *Sender) post(ctx context.Context, d store.WebhookDeliveryClaimed) (int, error) {
	if d.Secret == "" {
		return 0, errors.New("no signing secret (the subscription or task is gone)")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Body))
	if err != nil {
		return 0, errors.New("invalid URL")
	}
	ts := s.now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "flightdeck-webhooks/1")
	req.Header.Set("webhook-id", d.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", Sign(SigningKey(d.Secret), d.ID, ts, d.Body))
	tracing.Inject(ctx, req.Header) // the delivery span's traceparent (contract §8)
	res, err := s.client.Do(req)
	if err != nil {
		return 0, cleanError(err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	return res.StatusCode, nil
}

// cleanError drops the URL from a client error: it may hold a token.
func cleanError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("timed out")
	}
	return fmt.Errorf("request failed: %w", err)
}
