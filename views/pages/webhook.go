package pages

import "time"

// WebhookRow is one team subscription.
type WebhookRow struct {
	ID, URL, Team, Disabled, Format string
	Events                          []string
	CreatedAt                       time.Time
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
	Format     string // the form's format choice
	// Notice is a test message's outcome.
	Notice   string
	NoticeOK bool
	// Mails are the latest emails of the viewer's admin teams; MailOn
	// says whether email is configured at all.
	Mails  []MailDeliveryRow
	MailOn bool
}

// MailDeliveryRow is one email of the log admins see.
type MailDeliveryRow struct {
	ID, TaskID, Kind, Recipient, Subject, State, LastError string
	Attempts                                               int
	CreatedAt                                              time.Time
	NextAttemptAt                                          *time.Time
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

// formatName says a subscription's format in words.
func formatName(f string) string {
	if f == "slack" {
		return "chat (slack)"
	}
	return "standard"
}

// mailState says where an email stands: sent, retrying (and when), given up.
func mailState(m MailDeliveryRow) string {
	switch m.State {
	case "sent":
		return "sent"
	case "failed":
		return "given up"
	}
	if m.NextAttemptAt != nil && m.Attempts > 0 {
		return "retrying at " + m.NextAttemptAt.UTC().Format("15:04:05 UTC")
	}
	return "queued"
}
