package saga

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The hand-built tool.executed data says what json.Marshal says, and odd
// names still come out escaped.
func TestToolDataJSON(t *testing.T) {
	for _, d := range []toolData{
		{Tool: "noop", DurationMS: 0, Outcome: "ok"},
		{Tool: "http.get", DurationMS: 1234, Outcome: "error", Compensating: true},
		{Tool: `we"ird\name`, Outcome: "ok"},
		{Tool: "ünï", Outcome: "<ok>"},
	} {
		want, err := json.Marshal(d)
		require.NoError(t, err)
		require.Equal(t, string(want), string(d.json()))
	}
}
