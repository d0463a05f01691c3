package pipeline

import (
	"fmt"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What a form needs to know of a parameter's pattern: its length bound
// and the same rule in the browser's regular-expression dialect. Both are
// derived from the parsed pattern, so they never disagree with the
// server's check; a pattern outside the simple subset yields nothing (no
// limit known, no browser pattern) rather than a wrong one.

// MaxLen is the longest value (in characters) the parameter accepts: its
// max_length, else the bound its pattern implies when the pattern is
// anchored at both ends and finite; 0 when nothing bounds it below the
// global limit.
func (p *Param) MaxLen() int {
	if p.MaxLength != nil {
		return int(*p.MaxLength)
	}
	return p.patternMax
}

// patternMaxLen derives the longest match of an anchored pattern, or 0.
func patternMaxLen(pattern string) int {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0
	}
	inner, ok := anchored(re)
	if !ok {
		return 0
	}
	n := maxLen(inner)
	if n < 0 || n > maxStringParam {
		return 0
	}
	return n
}

// anchored returns the pattern between a leading ^ and a trailing $.
func anchored(re *syntax.Regexp) (*syntax.Regexp, bool) {
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 {
		return nil, false
	}
	first, last := re.Sub[0], re.Sub[len(re.Sub)-1]
	if first.Op != syntax.OpBeginText || last.Op != syntax.OpEndText {
		return nil, false
	}
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: re.Sub[1 : len(re.Sub)-1]}, true
}

// maxLen is the longest match of re in characters, -1 when unbounded.
func maxLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginText, syntax.OpEndText, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture:
		return maxLen(re.Sub[0])
	case syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpRepeat:
		n := maxLen(re.Sub[0])
		if n < 0 || re.Max < 0 {
			return -1
		}
		return n * re.Max
	case syntax.OpConcat:
		sum := 0
		for _, s := range re.Sub {
			n := maxLen(s)
			if n < 0 {
				return -1
			}
			sum += n
		}
		return sum
	case syntax.OpAlternate:
		most := 0
		for _, s := range re.Sub {
			n := maxLen(s)
			if n < 0 {
				return -1
			}
			most = max(most, n)
		}
		return most
	}
	return -1 // star, plus and anything else: unbounded
}

// HTMLPattern is the parameter's pattern for an HTML pattern attribute
// (JavaScript's dialect with the v flag, anchored to the whole value), or
// "" when it cannot be written there faithfully.
func (p *Param) HTMLPattern() string {
	if p.Pattern == "" {
		return ""
	}
	re, err := syntax.Parse(p.Pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	var b strings.Builder
	if len(subs) > 0 && subs[0].Op == syntax.OpBeginText {
		subs = subs[1:]
	} else {
		b.WriteString(`[\s\S]*`)
	}
	tail := `[\s\S]*`
	if len(subs) > 0 && subs[len(subs)-1].Op == syntax.OpEndText {
		subs, tail = subs[:len(subs)-1], ""
	}
	for _, s := range subs {
		if !writeJS(&b, s) {
			return ""
		}
	}
	b.WriteString(tail)
	return b.String()
}

// writeJS writes re in JavaScript's v-flag syntax; false for anything
// outside the subset both dialects read alike.
func writeJS(b *strings.Builder, re *syntax.Regexp) bool {
	if re.Flags&syntax.FoldCase != 0 && re.Op == syntax.OpLiteral {
		return false
	}
	switch re.Op {
	case syntax.OpEmptyMatch:
		return true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			writeJSRune(b, r)
		}
		return true
	case syntax.OpAnyChar:
		b.WriteString(`[\s\S]`)
		return true
	case syntax.OpAnyCharNotNL:
		b.WriteString(`[^\n]`)
		return true
	case syntax.OpCharClass:
		return writeJSClass(b, re.Rune)
	case syntax.OpCapture:
		b.WriteString("(?:")
		ok := writeJS(b, re.Sub[0])
		b.WriteString(")")
		return ok
	case syntax.OpConcat, syntax.OpAlternate:
		b.WriteString("(?:")
		for i, s := range re.Sub {
			if i > 0 && re.Op == syntax.OpAlternate {
				b.WriteString("|")
			}
			if !writeJS(b, s) {
				return false
			}
		}
		b.WriteString(")")
		return true
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		b.WriteString("(?:")
		if !writeJS(b, re.Sub[0]) {
			return false
		}
		b.WriteString(")")
		switch re.Op {
		case syntax.OpStar:
			b.WriteString("*")
		case syntax.OpPlus:
			b.WriteString("+")
		case syntax.OpQuest:
			b.WriteString("?")
		default:
			b.WriteString("{" + strconv.Itoa(re.Min) + ",")
			if re.Max >= 0 {
				b.WriteString(strconv.Itoa(re.Max))
			}
			b.WriteString("}")
		}
		if re.Flags&syntax.NonGreedy != 0 {
			b.WriteString("?")
		}
		return true
	}
	return false
}

// writeJSClass writes a class of rune ranges; every character escaped as
// \u{…}, which the v flag reads the same inside and outside classes.
func writeJSClass(b *strings.Builder, ranges []rune) bool {
	if len(ranges) == 0 {
		return false
	}
	b.WriteString("[")
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if hi > utf8.MaxRune {
			hi = utf8.MaxRune
		}
		writeJSRune(b, lo)
		if hi != lo {
			b.WriteString("-")
			writeJSRune(b, hi)
		}
	}
	b.WriteString("]")
	return true
}

func writeJSRune(b *strings.Builder, r rune) {
	if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
		b.WriteRune(r)
		return
	}
	fmt.Fprintf(b, `\u{%x}`, r)
}

// Describe is what the parameter accepts, in words: its hint, else its
// type and bounds (never the raw pattern, which few people read).
func (p *Param) Describe() string {
	switch {
	case p.Hint != "":
		return p.Hint
	case p.Type == "enum":
		return "one of " + strings.Join(p.Values, ", ")
	case p.Type == "int" && p.Min != nil && p.Max != nil:
		return fmt.Sprintf("a whole number from %d to %d", *p.Min, *p.Max)
	case p.Type == "int" && p.Min != nil:
		return fmt.Sprintf("a whole number, at least %d", *p.Min)
	case p.Type == "int" && p.Max != nil:
		return fmt.Sprintf("a whole number, at most %d", *p.Max)
	case p.Type == "int":
		return "a whole number"
	case p.Type == "bool":
		return "yes or no"
	}
	what := "text"
	if p.Type == "list" {
		what = "a list"
		if p.Pattern != "" {
			what += " of items"
		}
	}
	if p.Pattern != "" {
		what += " in the form this pipeline defines"
	}
	if p.Type == "list" {
		what += ", one per line or comma-separated"
	}
	if n := p.MaxLen(); n > 0 && p.Type != "list" {
		what += fmt.Sprintf(", up to %d characters", n)
	}
	return what
}
