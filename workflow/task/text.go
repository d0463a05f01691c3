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
	s = strings.TrimSpace(s)
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
