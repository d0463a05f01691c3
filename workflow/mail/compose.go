package mail

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"flightdeck/internal/words"
	"flightdeck/store"
	views "flightdeck/views/mail"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// Limits of what an email quotes: a huge diff is cut with a marker, a long
// value or error with an ellipsis (the page has the whole).
const (
	maxChanges    = 40
	maxValueRunes = 200
	maxLineRunes  = 300
	maxSubject    = 200
)

// Email is one composed message.
type Email struct {
	Subject, Text, HTML string
}

// Compose renders l under subject. The subject is one line whatever went
// into it: no CR, LF or other control character reaches a header.
func Compose(ctx context.Context, subject string, l views.Letter) (Email, error) {
	var b strings.Builder
	if err := views.HTML(l).Render(ctx, &b); err != nil {
		return Email{}, fmt.Errorf("error rendering email: %w", err)
	}
	return Email{Subject: "[flightdeck] " + cut(OneLine(subject), maxSubject), Text: l.Text(), HTML: b.String()}, nil
}

// OneLine replaces every control character (CR, LF, tab, NUL, U+2028…)
// with a space and folds runs of spaces: what goes into a header, or a
// one-line fact, can never start a new line.
func OneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\u0085' {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// About is what a message says about its task (emails and chat alike).
type About struct {
	What, Target, Version string
}

// Describe names a task as people say it: "web-service shop 1.2.3 →
// production" (pipeline, target, version, environment), one line.
func Describe(t *task.Task, pipes *pipeline.Catalog) About {
	a := describe(t, pipes)
	return About{What: a.what, Target: a.target, Version: a.version}
}

// about is what an email says about its task.
type about struct {
	t        *task.Task
	what     string // "web-service shop 1.2.3 → production"
	target   string // "app=shop"
	version  string
	pipeline *pipeline.Pipeline // nil for agent tasks or unknown pipelines
}

func describe(t *task.Task, pipes *pipeline.Catalog) about {
	a := about{t: t}
	var params map[string]any
	_ = json.Unmarshal(t.Params, &params)
	if t.Kind == task.KindAgent {
		a.what = "agent task “" + cut(OneLine(t.Prompt), 60) + "”"
		return a
	}
	var targetVals, targetNamed []string
	versionName := "version"
	if pipes != nil {
		if p, ok := pipes.Get(t.Pipeline); ok {
			a.pipeline = p
			versionName = p.VersionParam()
			tgt := p.TargetOf(params)
			for _, name := range slices.Sorted(maps.Keys(tgt)) {
				if name == versionName || secretName(name) {
					continue
				}
				v := OneLine(fmt.Sprint(tgt[name]))
				if t.Environment != "" && v == t.Environment {
					continue // said once, after the arrow
				}
				targetVals = append(targetVals, v)
				targetNamed = append(targetNamed, name+"="+v)
			}
		}
	}
	if v, ok := params[versionName]; ok && versionName != "" {
		a.version = cut(OneLine(fmt.Sprint(v)), 60)
	}
	a.target = strings.Join(targetNamed, " ")
	parts := []string{OneLine(t.Pipeline)}
	if len(targetVals) > 0 {
		parts = append(parts, cut(strings.Join(targetVals, " "), 80))
	}
	if a.version != "" {
		parts = append(parts, a.version)
	}
	a.what = strings.Join(parts, " ")
	if t.Environment != "" {
		a.what += " → " + OneLine(t.Environment)
	}
	return a
}

func (a about) facts() []views.Fact {
	fs := []views.Fact{{Name: "Task", Value: a.what + " (" + a.t.ID + ")"}}
	if a.target != "" {
		fs = append(fs, views.Fact{Name: "Target", Value: a.target})
	}
	if a.version != "" {
		fs = append(fs, views.Fact{Name: "Version", Value: a.version})
	}
	if a.t.Environment != "" {
		fs = append(fs, views.Fact{Name: "Environment", Value: OneLine(a.t.Environment)})
	}
	return fs
}

var secretRe = regexp.MustCompile(`(?i)secret|passw|token|api[_-]?key|private|credential`)

// secretName: a param whose name says it is a secret is never quoted (a
// pipeline's secret params are kept out of params at submit already; this
// is the second fence).
func secretName(name string) bool { return secretRe.MatchString(name) }

const redacted = "[redacted]"

// changes turns an approval's diff into the changed fields, secrets
// redacted, values cut, at most maxChanges of them.
func changes(c *task.Changes, p *pipeline.Pipeline) ([]views.Change, int) {
	if c == nil {
		return nil, 0
	}
	secret := map[string]bool{}
	if p != nil {
		for _, prm := range p.Params {
			if prm.Secret {
				secret[prm.Name] = true
			}
		}
	}
	var out []views.Change
	for _, f := range c.Fields {
		from, to := shown(c.From, f), shown(c.To, f)
		if secret[f] || secretName(f) {
			from, to = redacted, redacted
		}
		out = append(out, views.Change{Field: cut(OneLine(f), 80), From: from, To: to})
	}
	if len(out) > maxChanges {
		return out[:maxChanges], len(out) - maxChanges
	}
	return out, 0
}

func shown(m map[string]any, k string) string {
	v, ok := m[k]
	if m == nil || !ok || v == nil {
		return "—"
	}
	s, isStr := v.(string)
	if !isStr {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	return cut(OneLine(s), maxValueRunes)
}

// When says a time in people's words, relative to now, in the words every
// page uses (internal/words): "in 59 minutes (21:59 UTC today)", "3 hours
// ago (18:00 UTC today)", "in 2 days (Mon 30 Nov 21:00 UTC)".
func When(t, now time.Time) string {
	if t.After(now) {
		return "in " + words.Duration(t.Sub(now)) + " (" + words.At(t, now) + ")"
	}
	return words.Duration(now.Sub(t)) + " ago (" + words.At(t, now) + ")"
}

// why tells a person why they got an email and where to turn it off.
func why(base, reason string) string {
	return "You get this because " + reason + ". Turn these emails off on " + base + "/account."
}

// approvalKindWords is what an approval asks, by kind.
func approvalAsk(a about, ap *store.Approval) (subject, headline string) {
	switch ap.Kind {
	case string(task.ApprovalToolCall), "tool":
		tool := ""
		var d struct {
			Tool string `json:"tool"`
		}
		if json.Unmarshal(ap.Detail, &d) == nil && d.Tool != "" {
			tool = OneLine(d.Tool)
		}
		if tool == "" {
			tool = "a tool"
		}
		s := fmt.Sprintf("%s wants to run %s: needs your confirmation", a.what, tool)
		return s, "The " + s + "."
	case "environment":
		s := a.what + " needs your approval"
		return s, s + "."
	default:
		s := fmt.Sprintf("%s: step %s needs your approval", a.what, OneLine(ap.Step))
		return s, s + "."
	}
}
