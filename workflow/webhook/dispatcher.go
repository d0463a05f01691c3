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
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// ConsumerName is the dispatcher's outbox cursor; migration 00006 creates
// it, so events committed before the first serve process starts are sent too.
const ConsumerName = "webhooks"

// dispatcher turns outbox events into deliveries: one per event and
// matching endpoint (team subscriptions listing the event's type, and a
// task's own webhook for its terminal event).
type dispatcher struct {
	st     *store.Store
	pipes  *pipeline.Catalog // names targets and versions in chat messages
	base   string            // FLIGHTDECK_BASE_URL, for chat messages' links
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
		type target struct{ id, webhookID, url, format string }
		var targets []target
		typ := subscribedType(e)
		for _, w := range subs {
			if w.TeamID == e.TeamID && slices.Contains(w.Events, typ) {
				targets = append(targets, target{w.ID, w.ID, w.URL, w.Format})
			}
		}
		if u, ok := taskURLs[e.TaskID]; ok && e.Type.Terminal() {
			targets = append(targets, target{"task", "", u, FormatStandard})
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
		body, err := json.Marshal(message{Type: task.EventType(typ), Task: tb, Event: e.Event})
		if err != nil {
			return fmt.Errorf("error encoding webhook body: %w", err)
		}
		var chat []byte
		for _, tg := range targets {
			body := body
			if tg.format == FormatSlack {
				if chat == nil {
					if chat, err = slackBody(typ, e.Event, tb.Task, d.pipes, d.base); err != nil {
						return fmt.Errorf("error encoding chat message: %w", err)
					}
				}
				body = chat
			}
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
	// task.paused is not one of the contract's §4 types; chat
	// subscriptions may list it (and needs_attention, a task.state).
	types := append(slices.Clone(event.PublicTypes), task.EventTaskPaused)
	return event.Consumer{Name: ConsumerName, Types: types, Handle: d.handle, Poll: cfg.Poll, Logger: d.logger}
}
