// Package mail holds the bodies of the emails flightdeck sends (contract
// §12): one Letter, rendered as text/plain (Text) and text/html (HTML, a
// templ component). Plain data in, no I/O.
package mail

import (
	"strconv"
	"strings"
)

// Letter is one email's content.
type Letter struct {
	Headline string // what needs doing, in a sentence
	Facts    []Fact // who asked, task, target, version, step, error, until when
	Changes  []Change
	// ChangesCut is how many changed fields were left out (a huge diff is
	// cut with a marker; the page shows them all).
	ChangesCut int
	Link       string // FLIGHTDECK_BASE_URL + /tasks/<id> or /approvals
	LinkText   string // "Review and decide"
	Why        string // why this person got it, and how to turn it off
}

// Fact is one "name: value" line.
type Fact struct{ Name, Value string }

// Change is one changed param of a deploy: its value before and after.
type Change struct{ Field, From, To string }

// Text is the text/plain part.
func (l Letter) Text() string {
	var b strings.Builder
	b.WriteString(l.Headline + "\n\n")
	for _, f := range l.Facts {
		b.WriteString(f.Name + ": " + f.Value + "\n")
	}
	if len(l.Changes) > 0 {
		b.WriteString("\nWhat changes:\n")
		for _, c := range l.Changes {
			b.WriteString("  " + c.Field + ": " + c.From + " → " + c.To + "\n")
		}
		if l.ChangesCut > 0 {
			b.WriteString("  " + CutMarker(l.ChangesCut) + "\n")
		}
	}
	b.WriteString("\n" + l.LinkText + ": " + l.Link + "\n")
	if l.Why != "" {
		b.WriteString("\n-- \n" + l.Why + "\n")
	}
	return b.String()
}

// CutMarker says how much of a diff was left out.
func CutMarker(n int) string {
	if n == 1 {
		return "[… 1 more change not shown: see the page]"
	}
	return "[… " + strconv.Itoa(n) + " more changes not shown: see the page]"
}
