package pages

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEmptyListHintIsInTheREADME: the command the empty task list
// suggests is one the README's command list shows, with the flags used.
func TestEmptyListHintIsInTheREADME(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	start := strings.Index(string(readme), "## Commands")
	require.GreaterOrEqual(t, start, 0)
	commands := string(readme)[start:]
	commands = commands[:strings.Index(commands, "\n```\n\n")]

	hint := render(t, TaskList(TaskListProps{})).Find(`[data-testid="empty-cli"]`).Text()
	fields := strings.Fields(hint)
	require.GreaterOrEqual(t, len(fields), 2)
	require.Contains(t, commands, "flightdeck "+fields[1]+" ", "the README lists the command")
	for _, f := range fields {
		if strings.HasPrefix(f, "--") {
			require.Contains(t, commands, f, "the README shows the flag")
		}
	}
}
