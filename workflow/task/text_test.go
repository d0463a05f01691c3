package task

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPersonText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want, why string
		min           int
	}{
		{in: "", want: ""},
		{in: "  ok  ", want: "ok"},
		{in: "          ", min: 10, why: "must have at least 10 characters that are not spaces"},
		{in: "a b c d e f g h i", min: 10, why: "must have at least 10 characters that are not spaces"},
		{in: " abcdefghij ", min: 10, want: "abcdefghij"},
		{in: "   ", min: 1, why: "is required"},
		{in: strings.Repeat("é", 2048), want: strings.Repeat("é", 2048)},
		{in: strings.Repeat("é", 2048) + "x", why: "must be at most 4096 bytes"},
		{in: "a\x00b", why: "must be UTF-8 text without NUL bytes"},
		{in: "a\xffb", why: "must be UTF-8 text without NUL bytes"},
		{in: "invoice\u202egpj.exe", want: `invoice\u202egpj.exe`},
		{in: "\u2066a\u2069 \u200e\u200f \u202a", want: `\u2066a\u2069 \u200e\u200f \u202a`},
	} {
		got, why := PersonText(tc.in, tc.min)
		require.Equal(t, tc.why, why, "%q", tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
	}
}
