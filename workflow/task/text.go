package task

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TextMaxBytes bounds every free text a person writes (a comment, a
// reason), whatever the way in: the API, a page form or a socket.
const TextMaxBytes = 4096

// PersonText is the one rule for free text a person writes: it returns s
// trimmed, or why it is refused: not UTF-8 text (or holding a NUL byte,
// which PostgreSQL cannot store), over TextMaxBytes, or with fewer than
// min characters that are not spaces (min 0: it may be empty). The reason
// is a phrase to follow the field's name ("comment must be …").
func PersonText(s string, min int) (string, string) {
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return "", "must be UTF-8 text without NUL bytes"
	}
	s = strings.TrimSpace(ShowBidi(s))
	if len(s) > TextMaxBytes {
		return "", fmt.Sprintf("must be at most %d bytes", TextMaxBytes)
	}
	if min > 0 && NonSpaceChars(s) < min {
		if min == 1 {
			return "", "is required"
		}
		return "", fmt.Sprintf("must have at least %d characters that are not spaces", min)
	}
	return s, ""
}

// ShowBidi replaces the bidirectional controls (U+202A–U+202E,
// U+2066–U+2069, U+200E, U+200F) by their escapes (\u202e): in a reason
// or a comment, a right-to-left override would make what people read
// differ from what was written (an audit line that reads backwards). The
// escape is also what the character means inside a JSON string, so an
// audit detail stays the same JSON value.
func ShowBidi(s string) string {
	if !strings.ContainsFunc(s, isBidiControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isBidiControl(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isBidiControl(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x200E || r == 0x200F
}

// NonSpaceChars counts the characters of s that are not white space: what
// a minimum length counts, so ten spaces are not a reason.
func NonSpaceChars(s string) int {
	n := 0
	for _, r := range s {
		if !unicode.IsSpace(r) {
			n++
		}
	}
	return n
}
