package handlers

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSafeNext: a post-login redirect stays on this site whatever the
// browser makes of the value (browsers drop tabs and newlines inside URLs
// and read a backslash as a slash).
func TestSafeNext(t *testing.T) {
	t.Parallel()
	tests := []struct{ next, want string }{
		{"", "/tasks"},
		{"/tasks/123", "/tasks/123"},
		{"/tasks?state=running&kind=deploy", "/tasks?state=running&kind=deploy"},
		{"/approvals#top", "/approvals#top"},
		{"/tasks/a%20b", "/tasks/a%20b"},
		{"tasks", "/tasks"},
		{"//evil.example", "/tasks"},
		{"//evil.example/x", "/tasks"},
		{"/\\evil.example", "/tasks"},
		{"\\\\evil.example", "/tasks"},
		{"/\t/evil.example", "/tasks"},
		{"/\n/evil.example", "/tasks"},
		{"/\r/evil.example", "/tasks"},
		{"\t//evil.example", "/tasks"},
		{" //evil.example", "/tasks"},
		{"/%09/evil.example", "/tasks"},
		{"/%0a/evil.example", "/tasks"},
		{"/%2F/evil.example", "/tasks"},
		{"/%2f%2fevil.example", "/tasks"},
		{"/%5C/evil.example", "/tasks"},
		{"/%5cevil.example", "/tasks"},
		{"%2F%2Fevil.example", "/tasks"},
		{"/tasks\\..\\..\\evil", "/tasks"},
		{"https://evil.example", "/tasks"},
		{"http:evil.example", "/tasks"},
		{"javascript:alert(1)", "/tasks"},
		{"/javascript:alert(1)", "/javascript:alert(1)"},
		{"data:text/html,x", "/tasks"},
		{"/\x00/evil.example", "/tasks"},
		{"/\x7f/evil.example", "/tasks"},
		{"/\u3000/evil.example", "/tasks"},
		{"/\u00a0/evil.example", "/tasks"},
		{"/%E3%80%80/x", "/%E3%80%80/x"},
		{"/@evil.example", "/@evil.example"},
		{"/ok/%zz", "/tasks"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, safeNext(tt.next), "next %q", tt.next)
	}
}
