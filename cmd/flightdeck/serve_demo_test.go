package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDemoPasswordsStayAcrossStarts: the second start of one data folder
// gets the passwords the first printed, from a file only its owner reads;
// a user the file lacks gets a new one without changing the others.
func TestDemoPasswordsStayAcrossStarts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data", demoPasswordFile)
	emails := []string{"admin@demo.local", "dev@demo.local"}

	first, err := demoPasswords(path, emails)
	require.NoError(t, err)
	require.Len(t, first, 2)
	require.NotEqual(t, first["admin@demo.local"], first["dev@demo.local"])
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	again, err := demoPasswords(path, emails)
	require.NoError(t, err)
	require.Equal(t, first, again)

	more, err := demoPasswords(path, append(emails, "approver@demo.local"))
	require.NoError(t, err)
	require.Equal(t, first["admin@demo.local"], more["admin@demo.local"])
	require.Equal(t, first["dev@demo.local"], more["dev@demo.local"])
	require.NotEmpty(t, more["approver@demo.local"])
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, 3, strings.Count(string(b), "\n"))
}
