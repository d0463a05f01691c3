package pages

import "time"

// WebhookRow is one team subscription.
type WebhookRow struct {
	ID, URL, Team, Disabled string
	Events                  []string
	CreatedAt               time.Time
}

// WebhookListProps are the inputs of WebhookList.
type WebhookListProps struct {
	Webhooks   []WebhookRow
	EventTypes []string // choices of the create form
	Teams      []string // teams the viewer administers (a choice when several)
	CSRFToken  string
	// After a create: the new subscription's secret, shown this once.
	NewID, NewSecret string
	// After a refused create: the message and the form's values.
	Error, URL string
	Selected   []string
}

// WebhookDeliveryRow is one line of a delivery log.
type WebhookDeliveryRow struct {
	ID, TaskID, Event, State, LastError string
	Attempts, LastStatus                int
	CreatedAt                           time.Time
	NextAttemptAt                       *time.Time
}

// WebhookShowProps are the inputs of WebhookShow.
type WebhookShowProps struct {
	Webhook    WebhookRow
	Deliveries []WebhookDeliveryRow
	CSRFToken  string
	Notice     string
}
