package webhook

import (
	"encoding/json"
	"strings"

	"flightdeck/store"
	"flightdeck/workflow/mail"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// Formats of a team subscription's body (contract §12).
const (
	FormatStandard = "standard" // {"type","task","event"}, Standard Webhooks signed
	FormatSlack    = "slack"    // a Slack-compatible incoming-webhook message
)

// EventNeedsAttention is the subscribable name of a task.state event that
// moved a task to needs_attention.
const EventNeedsAttention = "task.needs_attention"

// ChatTypes are the event types a subscription may list beyond the
// contract's PublicTypes: a paused task and one needing an admin.
var ChatTypes = []string{string(task.EventTaskPaused), EventNeedsAttention}

// subscribedType is the name subscriptions list e under.
func subscribedType(e store.OutboxEvent) string {
	if e.Type == task.EventTaskState {
		var d struct {
			State task.State `json:"state"`
		}
		if json.Unmarshal(e.Data, &d) == nil && d.State == task.StateNeedsAttention {
			return EventNeedsAttention
		}
	}
	return string(e.Type)
}

// slackMessage is an incoming-webhook message: Slack reads blocks,
// Mattermost and Rocket.Chat read text (and Slack shows text in
// notifications), so text alone says everything, link included.
type slackMessage struct {
	Text   string `json:"text"`
	Blocks []any  `json:"blocks"`
}

type slackText struct {
	Type string `json:"type"` // mrkdwn | plain_text
	Text string `json:"text"`
}

// slackBody renders event typ of t as a chat message; base is
// FLIGHTDECK_BASE_URL.
func slackBody(typ string, e task.Event, t *task.Task, pipes *pipeline.Catalog, base string) ([]byte, error) {
	a := mail.Describe(t, pipes)
	var d struct {
		Roles      []string         `json:"roles"`
		FailedStep *task.FailedStep `json:"failed_step"`
		Error      *string          `json:"error"`
		By         string           `json:"by"`
	}
	_ = json.Unmarshal(e.Data, &d)
	creator := mail.OneLine(t.CreatedBy)
	link, button := base+"/tasks/"+t.ID, "Open the task"
	var what, ofWhom string
	switch typ {
	case string(task.EventApprovalRequested):
		roles := d.Roles
		if len(roles) == 0 {
			roles = task.DefaultDeciders()
		}
		what = "needs approval"
		if e.StepName != "" {
			what = "step " + mail.OneLine(e.StepName) + " needs approval"
		}
		ofWhom = "any " + strings.Join(roles, " or ") + " of team " + mail.OneLine(t.Team) + " except " + creator + ", who asked"
		link, button = base+"/approvals", "Review and decide"
	case string(task.EventTaskPaused):
		if d.FailedStep != nil {
			what = "step " + mail.OneLine(d.FailedStep.Name) + " failed and waits for a decision: retry, skip or roll back"
			ofWhom = creator + " (who started it) or an approver or admin"
			button = "Decide"
		} else {
			what = "was paused"
		}
	case EventNeedsAttention:
		what = "needs an admin: undoing its steps failed"
		ofWhom = "an admin of team " + mail.OneLine(t.Team)
	case string(task.EventTaskCompleted):
		what = "completed"
	case string(task.EventTaskFailed):
		what = "failed"
	case string(task.EventTaskCancelled):
		what = "was cancelled"
		if d.By != "" {
			what += " by " + mail.OneLine(d.By)
		}
	default:
		what = typ + ": " + mail.OneLine(e.Message)
	}
	if len(what) > 300 {
		what = what[:300] + "…"
	}
	errText := ""
	if d.Error != nil && *d.Error != "" && typ != string(task.EventTaskCompleted) {
		errText = mail.OneLine(*d.Error)
		if r := []rune(errText); len(r) > 300 {
			errText = string(r[:299]) + "…"
		}
	}
	text := "[flightdeck] " + a.What + " " + what
	if ofWhom != "" {
		text += " (asked of " + ofWhom + ")"
	}
	if errText != "" {
		text += ". Error: " + errText
	}
	// Escaped: a task name cannot ping a channel (<!channel>) or hide a link.
	text = slackEscape(text) + " " + link
	fields := []slackText{{Type: "mrkdwn", Text: "*Task*\n" + t.ID}}
	if a.Target != "" {
		fields = append(fields, slackText{Type: "mrkdwn", Text: "*Target*\n" + a.Target})
	}
	if a.Version != "" {
		fields = append(fields, slackText{Type: "mrkdwn", Text: "*Version*\n" + a.Version})
	}
	if t.Environment != "" {
		fields = append(fields, slackText{Type: "mrkdwn", Text: "*Environment*\n" + mail.OneLine(t.Environment)})
	}
	if ofWhom != "" {
		fields = append(fields, slackText{Type: "mrkdwn", Text: "*Asked of*\n" + ofWhom})
	}
	fields = append(fields, slackText{Type: "mrkdwn", Text: "*Started by*\n" + creator})
	blocks := []any{
		map[string]any{"type": "section", "text": slackText{Type: "mrkdwn", Text: "*" + slackEscape(a.What) + "* " + slackEscape(what)}},
		map[string]any{"type": "section", "fields": escapeFields(fields)},
	}
	if errText != "" {
		blocks = append(blocks, map[string]any{"type": "section", "text": slackText{Type: "mrkdwn", Text: "*Error:* " + slackEscape(errText)}})
	}
	blocks = append(blocks, map[string]any{"type": "actions", "elements": []any{map[string]any{
		"type": "button", "text": slackText{Type: "plain_text", Text: button}, "url": link, "style": "primary"}}})
	return json.Marshal(slackMessage{Text: text, Blocks: blocks})
}

// slackEscape keeps a value from being read as a link or mention (<…>)
// in mrkdwn; Slack asks for exactly these three.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func escapeFields(fs []slackText) []slackText {
	for i := range fs {
		name, value, _ := strings.Cut(fs[i].Text, "\n")
		fs[i].Text = name + "\n" + slackEscape(value)
	}
	return fs
}
