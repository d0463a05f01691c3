// Package words says times, durations and counts the way people read
// them, for pages, error messages and emails alike: "2 minutes", "17:08
// UTC today", "completed with 1 step skipped", "a version like 1.2.3".
// Machine formats (the API's JSON, CSV) keep RFC 3339; nothing here is
// meant to be parsed back.
package words

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
	"unicode"
)

// Duration says a span in at most two units, rounded down to the smaller:
// "250 ms" (a retry's short wait), "45 seconds", "2 minutes", "2 minutes 30
// seconds", "1 hour 5 minutes", "3 days 4 hours". Never Go's "2m0s".
func Duration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	units := []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}}
	for i, u := range units {
		if d < u.size {
			continue
		}
		n := int64(d / u.size)
		out := Count(n, u.name)
		if i+1 < len(units) {
			next := units[i+1]
			if m := int64(d % u.size / next.size); m > 0 {
				out += " " + Count(m, next.name)
			}
		}
		return out
	}
	return "less than a second"
}

// Count says n of a noun, plural when it is not one: "1 step", "2 steps".
func Count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// At says a moment relative to now's day, in UTC (the server's one clock
// for everyone): "17:08:09 UTC today", "06:00 UTC tomorrow", "Sat 28 Nov
// 17:08 UTC", with the year when it is not now's. Seconds are kept only
// within a day, where they may matter (a soak that ends in a minute).
func At(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	ty, tm, td := t.Date()
	ny, nm, nd := now.Date()
	day := func(off int) bool {
		y, m, d := now.AddDate(0, 0, off).Date()
		return ty == y && tm == m && td == d
	}
	clock := t.Format("15:04")
	if t.Second() != 0 {
		clock = t.Format("15:04:05")
	}
	switch {
	case ty == ny && tm == nm && td == nd:
		return clock + " UTC today"
	case day(1):
		return clock + " UTC tomorrow"
	case day(-1):
		return clock + " UTC yesterday"
	case ty == ny:
		return t.Format("Mon 2 Jan 15:04") + " UTC"
	}
	return t.Format("Mon 2 Jan 2006 15:04") + " UTC"
}

// Stamp says a moment fully, for a title or a table cell where the day is
// not implied: "Sat 28 Nov 2026 17:08:09 UTC" (one "UTC", never two).
func Stamp(t time.Time) string { return t.UTC().Format("Mon 2 Jan 2006 15:04:05") + " UTC" }

// Until says when something may happen, from now: "at 17:08:09 UTC today
// (in 2 minutes)"; a moment already past reads "now".
func Until(t, now time.Time) string {
	if !t.After(now) {
		return "now"
	}
	return "at " + At(t, now) + " (in " + Duration(t.Sub(now)) + ")"
}

// Completed says how a task that completed ended, naming skipped steps:
// "completed", "completed with 1 step skipped".
func Completed(skipped int) string {
	if skipped <= 0 {
		return "completed"
	}
	return "completed with " + Count(int64(skipped), "step") + " skipped"
}

// Example makes a short value that matches the pattern, for a message
// that says what a valid value looks like ("a version like 1.2.3")
// instead of quoting a regular expression. Digits count up 1, 2, 3 so a
// version pattern reads naturally. It returns "" when the pattern is
// invalid or has no simple example (the caller then says less).
func Example(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	g := &gen{}
	g.walk(re.Simplify())
	out := g.b.String()
	if g.bad || out == "" || len(out) > 40 {
		return ""
	}
	if ok, _ := regexp.MatchString(pattern, out); !ok {
		return ""
	}
	return out
}

type gen struct {
	b     strings.Builder
	digit int
	bad   bool
}

func (g *gen) walk(re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				r = unicode.ToLower(r)
			}
			g.b.WriteRune(r)
		}
	case syntax.OpCharClass:
		g.b.WriteRune(g.pick(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		g.b.WriteRune('a')
	case syntax.OpCapture:
		g.walk(re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			g.walk(s)
		}
	case syntax.OpAlternate:
		g.walk(re.Sub[0])
	case syntax.OpPlus:
		g.walk(re.Sub[0])
	case syntax.OpRepeat:
		for i := 0; i < max(re.Min, 1) && i < 40; i++ {
			if re.Min == 0 {
				break
			}
			g.walk(re.Sub[0])
		}
	case syntax.OpStar, syntax.OpQuest, syntax.OpEmptyMatch,
		syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
	default:
		g.bad = true
	}
}

// pick chooses a character of a class: the next counting digit if digits
// are in it, else a lowercase letter, else its first character.
func (g *gen) pick(ranges []rune) rune {
	in := func(c rune) bool {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= c && c <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	d := rune('1' + g.digit%9)
	if in(d) {
		g.digit++
		return d
	}
	for _, c := range "aexv0" {
		if in(c) {
			return c
		}
	}
	if len(ranges) == 0 {
		g.bad = true
		return 'a'
	}
	return ranges[0]
}

// Outcome is the word a page shows for a task's state: its state in words,
// but "completed with 1 step skipped" when steps were skipped and
// "rejected" for a deploy cancelled by a reviewer's or approver's "no"
// (the API's state stays "cancelled"). errText is the task's error, which
// the store writes as "… rejected by <who>" for a rejection
// (store/approval.go).
func Outcome(state, errText string, skipped int) string {
	switch {
	case state == "completed":
		return Completed(skipped)
	case Rejected(state, errText):
		return "rejected"
	}
	return strings.ReplaceAll(state, "_", " ")
}

// Rejected says whether a task ended because someone rejected it.
func Rejected(state, errText string) bool {
	return state == "cancelled" && strings.Contains(errText, " rejected by ")
}

// Recurring says a recurring freeze window once instead of one row per
// occurrence: "nightly 22:00–06:00 UTC, every day", "daytime 12:00–13:00,
// every day", "Fri 16:00–Mon 08:00 Europe/Berlin, every week". text is
// the window as written; fromMinute its start in minutes from midnight
// (daily windows).
func Recurring(weekly bool, fromMinute int, text string) string {
	if weekly {
		return text + ", every week"
	}
	if h := fromMinute / 60; h >= 18 || h < 6 {
		return "nightly " + text + ", every day"
	}
	return "daytime " + text + ", every day"
}
