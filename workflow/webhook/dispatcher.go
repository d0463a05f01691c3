package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"flightdeck/store"
	"flightdeck/workflow/event"
)

// ConsumerName is the dispatcher's outbox cursor; migration 00006 creates
// it, so events committed before the first serve process starts are sent too.
const ConsumerName = "webhooks"

// dispatcher turns outbox events into deliveries: one per event and
// matching endpoint (team subscriptions listing the event's type, and a
// task's own webhook for its terminal event).
type dispatcher struct {
	st     *store.Store
	logger *slog.Logger
	wake   func() // tells the sender that deliveries are due
}

// handle enqueues the deliveries of a batch. Delivery ids are derived from
// (target, task, seq), so handling a batch twice enqueues nothing new.
func (d *dispatcher) handle(ctx context.Context, events []store.OutboxEvent) error {
	var teams, terminal []string
	for _, e := range events {
		if !slices.Contains(teams, e.TeamID) {
			teams = append(teams, e.TeamID)
		}
		if e.Type.Terminal() {
			terminal = append(terminal, e.TaskID)
		}
	}
	subs, err := d.st.WebhookActive(ctx, teams)
	if err != nil {
		return err
	}
	taskURLs := map[string]string{}
	if len(terminal) > 0 {
		if taskURLs, err = d.st.TaskWebhookURLs(ctx, terminal); err != nil {
			return err
		}
	}
	bodies := map[string]taskBody{} // one load per task and batch
	var out []store.WebhookDeliveryParams
	for _, e := range events {
		type target struct{ id, webhookID, url string }
		var targets []target
		for _, w := range subs {
			if w.TeamID == e.TeamID && slices.Contains(w.Events, string(e.Type)) {
				targets = append(targets, target{w.ID, w.ID, w.URL})
			}
		}
		if u, ok := taskURLs[e.TaskID]; ok && e.Type.Terminal() {
			targets = append(targets, target{"task", "", u})
		}
		if len(targets) == 0 {
			continue
		}
		tb, ok := bodies[e.TaskID]
		if !ok {
			tb, err = loadTaskBody(ctx, d.st, e.TeamID, e.TaskID)
			if errors.Is(err, store.ErrNotFound) {
				continue // deleted since
			}
			if err != nil {
				return err
			}
			bodies[e.TaskID] = tb
		}
		body, err := json.Marshal(message{Type: e.Type, Task: tb, Event: e.Event})
		if err != nil {
			return fmt.Errorf("error encoding webhook body: %w", err)
		}
		for _, tg := range targets {
			out = append(out, store.WebhookDeliveryParams{
				ID: MessageID(tg.id, e.TaskID, e.Seq), TeamID: e.TeamID, WebhookID: tg.webhookID,
				TaskID: e.TaskID, Seq: e.Seq, EventType: string(e.Type), URL: tg.url, Body: body,
			})
		}
	}
	n, err := d.st.WebhookDeliveryEnqueue(ctx, out)
	if err != nil {
		return err
	}
	if n > 0 {
		d.logger.Debug("Webhook deliveries enqueued", "count", n)
		d.wake()
	}
	return nil
}

// consumer is the dispatcher as an outbox consumer.
func (d *dispatcher) consumer(cfg Config) event.Consumer {
	return event.Consumer{Name: ConsumerName, Handle: d.handle, Poll: cfg.Poll, Logger: d.logger}
}
