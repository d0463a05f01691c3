package words

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Audit says an audit entry as a sentence ("pat@acme.test approved the
// deploy to production: “looks good”"), from its actor, type and detail
// (contract §9; the store writes the details: store/approval.go,
// freeze.go, task_pause.go, task_control.go, token.go). A type it does not
// know reads "<actor> did <type>"; the page keeps the raw detail behind a
// toggle for what a sentence leaves out.
func Audit(actor, typ string, detail json.RawMessage) string {
	var d map[string]any
	_ = json.Unmarshal(detail, &d)
	str := func(k string) string {
		switch v := d[k].(type) {
		case string:
			return v
		case float64:
			return fmt.Sprint(v)
		}
		return ""
	}
	who := actor
	switch actor {
	case "cli":
		who = "The command line"
	case "system":
		who = "flightdeck"
	case "":
		who = "Someone"
	}
	quoted := func(k string) string {
		if s := strings.TrimSpace(str(k)); s != "" {
			return ": “" + s + "”"
		}
		return ""
	}
	until := func() string {
		t, err := time.Parse(time.RFC3339Nano, str("until"))
		if err != nil {
			return ""
		}
		return " until " + t.UTC().Format("Mon 2 Jan 2006 15:04") + " UTC"
	}
	step := func() string {
		if s := str("step"); s != "" {
			return "step " + s
		}
		return "a step"
	}
	switch typ {
	case "approval.decided":
		verb := "decided on"
		switch str("decision") {
		case "approved":
			verb = "approved"
		case "rejected":
			verb = "rejected"
		}
		what := step()
		if env := str("environment"); env != "" {
			what = "the deploy to " + env + " as a reviewer"
		} else if str("kind") == "tool_call" {
			what = "the agent's " + str("step")
		}
		return who + " " + verb + " " + what + quoted("comment")
	case "task.override":
		return who + " overrode the rules of " + or(str("environment"), "the environment") + quoted("reason")
	case "task.cancelled":
		if s := str("state"); s != "" {
			return who + " cancelled the task while it was " + strings.ReplaceAll(s, "_", " ")
		}
		return who + " cancelled the task"
	case "task.resolved":
		return who + " resolved the stuck task (" + or(str("action"), "resolve") + ")" + quoted("comment")
	case "task.paused":
		return who + " paused the task"
	case "task.resumed":
		switch str("action") {
		case "retry":
			return who + " retried " + step()
		case "skip":
			return who + " skipped " + step() + " and went on" + quoted("comment")
		case "rollback":
			if r := str("reason"); r != "" {
				return who + " rolled the task back after " + step() + " failed: " + r
			}
			return who + " rolled the task back after " + step() + " failed" + quoted("comment")
		}
		return who + " resumed the task"
	case "step.skipped":
		return who + " skipped " + step() + quoted("comment")
	case "freeze.created":
		return who + " froze " + or(str("environment"), "an environment") + until() + quoted("reason")
	case "freeze.ended":
		return who + " ended the freeze of " + or(str("environment"), "an environment") + quoted("reason")
	case "token.created":
		return who + " created the token " + or(str("name"), "(unnamed)") + " for " + or(str("email"), "a user")
	case "token.revoked":
		n := str("revoked")
		if n == "" || n == "1" {
			return who + " revoked the token " + str("name") + " of " + or(str("email"), "a user")
		}
		return who + " revoked " + n + " tokens of " + or(str("email"), "a user")
	case "webhook.create":
		return who + " added a webhook"
	case "webhook.delete":
		return who + " deleted a webhook"
	case "user.auto_joined":
		return who + " joined the team as " + or(str("role"), "a member") + " through single sign-on"
	case "question.answered":
		return who + " answered the agent's question"
	}
	return who + " did " + typ
}

func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
