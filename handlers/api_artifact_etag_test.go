package handlers

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNoneMatch(t *testing.T) {
	const etag = `"abc"`
	for _, tt := range []struct {
		headers []string
		want    bool
	}{
		{nil, false},
		{[]string{`"abc"`}, true},
		{[]string{`W/"abc"`}, true},
		{[]string{`"x", "abc"`}, true},
		{[]string{`"x"`, `"abc"`}, true},
		{[]string{`*`}, true},
		{[]string{`"ab"`}, false},
		{[]string{`"abcd"`}, false},
		{[]string{`x"abc"y`}, false},
		{[]string{``}, false},
	} {
		require.Equal(t, tt.want, noneMatch(tt.headers, etag), "%q", tt.headers)
	}
}
