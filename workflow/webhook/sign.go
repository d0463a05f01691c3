// Package webhook delivers task events to HTTP endpoints: a Dispatcher reads
// the outbox (task_events, by cursor) and enqueues one delivery per event and
// endpoint; a Sender claims due deliveries and POSTs them, signed the
// Standard Webhooks way, through an SSRF Guard, retrying on a backoff
// Schedule. Task workers never wait on either.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// SecretPrefix starts every team subscription secret.
const SecretPrefix = "whsec_"

// NewSecret returns a new subscription secret: "whsec_" + base64 of 24
// random bytes.
func NewSecret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails (crypto/rand doc)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// SigningKey returns the HMAC key of a secret: the base64-decoded part after
// "whsec_" for team subscriptions, the secret's own bytes otherwise (a
// task's webhook secret, chosen by the client).
func SigningKey(secret string) []byte {
	if rest, ok := strings.CutPrefix(secret, SecretPrefix); ok {
		if k, err := base64.StdEncoding.DecodeString(rest); err == nil {
			return k
		}
	}
	return []byte(secret)
}

// Sign returns the webhook-signature header value for a message:
// "v1," + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body)).
func Sign(key []byte, id string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%s.", id, strconv.FormatInt(timestamp, 10))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// MessageID derives the webhook-id of an event for one target ("task" for
// the task's own webhook, else the subscription id). Deterministic, so
// enqueueing the same event twice yields the same id and one delivery.
func MessageID(target, taskID string, seq int) string {
	h := sha256.Sum256([]byte(target + "|" + taskID + "|" + strconv.Itoa(seq)))
	return "msg_" + hex.EncodeToString(h[:16])
}
