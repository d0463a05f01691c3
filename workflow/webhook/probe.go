package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"flightdeck/store"
)

// Probe sends one test message to a team subscription now and returns the
// answer's status: the webhooks page's "Send a test message". It dials
// through the guard like every delivery, signs like every delivery, is
// bounded by timeout, and is not recorded (it is no event's delivery).
func Probe(ctx context.Context, g *Guard, timeout time.Duration, w *store.Webhook, team, base string) (int, error) {
	link := base + "/webhooks/" + w.ID
	var body []byte
	var err error
	if w.Format == FormatSlack {
		text := "[flightdeck] Test message: this channel will be told when tasks of team " + slackEscape(team) +
			" need someone (" + slackEscape(joinEvents(w.Events)) + "). " + link
		body, err = json.Marshal(slackMessage{Text: text, Blocks: []any{
			map[string]any{"type": "section", "text": slackText{Type: "mrkdwn", Text: text}},
			map[string]any{"type": "actions", "elements": []any{map[string]any{
				"type": "button", "text": slackText{Type: "plain_text", Text: "Open the webhook"}, "url": link}}},
		}})
	} else {
		body, err = json.Marshal(map[string]any{"type": "webhook.test", "team": team, "webhook_id": w.ID, "events": w.Events})
	}
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("invalid URL")
	}
	id := "msg_test_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "flightdeck-webhooks/1")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", Sign(SigningKey(w.Secret), id, ts, body))
	res, err := NewClient(g, timeout).Do(req)
	if err != nil {
		return 0, cleanError(err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	return res.StatusCode, nil
}

func joinEvents(es []string) string {
	out := ""
	for i, e := range es {
		if i > 0 {
			out += ", "
		}
		out += e
	}
	return out
}
