package artifact

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// important reports whether a line looks like trouble. Plain substring
// checks: a case-insensitive regexp over every line of a large log costs
// seconds.
func important(s string) bool {
	l := strings.ToLower(s)
	for _, w := range []string{"error", "fail", "panic", "fatal", "denied", "timeout"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

const (
	headLines    = 20
	tailLines    = 40
	errorLines   = 20
	maxLineChars = 300
	maxExcerpt   = 8 << 10
)

// lineStats follows the text as it streams by: line count, the first and
// last lines and the error-looking ones, for the summary and excerpt.
type lineStats struct {
	partial string
	n       int
	errs    int
	head    []numbered
	tail    []numbered
	hits    []numbered
}

type numbered struct {
	n    int
	text string
}

func (l *lineStats) add(s string) {
	s = l.partial + s
	parts := strings.Split(s, "\n")
	l.partial = parts[len(parts)-1]
	for _, line := range parts[:len(parts)-1] {
		l.line(line)
	}
}

func (l *lineStats) line(s string) {
	l.n++
	if len(s) > maxLineChars {
		cut := maxLineChars
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	s = Visible(s)
	nl := numbered{l.n, s}
	if len(l.head) < headLines {
		l.head = append(l.head, nl)
	}
	if important(s) {
		l.errs++
		if len(l.hits) < errorLines {
			l.hits = append(l.hits, nl)
		}
	}
	l.tail = append(l.tail, nl)
	if len(l.tail) > tailLines {
		l.tail = l.tail[1:]
	}
}

func (l *lineStats) finish() {
	if l.partial != "" {
		l.line(l.partial)
		l.partial = ""
	}
}

func (l *lineStats) summary(bytes int64) string {
	l.finish()
	last := ""
	if len(l.tail) > 0 {
		last = l.tail[len(l.tail)-1].text
	}
	return fmt.Sprintf("%d bytes, %d lines, %d error lines; last line: %s", bytes, l.n, l.errs, last)
}

// excerpt lists the first lines, the error lines and the last lines in
// order, once each, with their line numbers.
func (l *lineStats) excerpt() string {
	l.finish()
	seen := map[int]bool{}
	var all []numbered
	for _, group := range [][]numbered{l.head, l.hits, l.tail} {
		for _, nl := range group {
			if !seen[nl.n] {
				seen[nl.n] = true
				all = append(all, nl)
			}
		}
	}
	sortNumbered(all)
	var b strings.Builder
	prev := 0
	for _, nl := range all {
		if prev != 0 && nl.n > prev+1 {
			b.WriteString("…\n")
		}
		line := fmt.Sprintf("%d: %s\n", nl.n, nl.text)
		if b.Len()+len(line) > maxExcerpt {
			break
		}
		b.WriteString(line)
		prev = nl.n
	}
	return b.String()
}

func sortNumbered(a []numbered) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].n < a[j-1].n; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// Visible is s fit for a text column and a person: the artifact keeps a
// step's bytes exactly, but PostgreSQL's text refuses NUL and invalid
// UTF-8, and a summary or excerpt holding them would lose the whole
// artifact. Each such byte shows as U+FFFD, as in step.log events.
func Visible(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == 0 || r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
