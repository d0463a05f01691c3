package saga

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"

	"flightdeck/workflow/pipeline"
)

// TestIdempotencyKeyIsStable: keys of stored steps must never change, so
// the key is pinned to its original formula.
func TestIdempotencyKeyIsStable(t *testing.T) {
	original := func(taskID string, ps pipeline.PlannedStep, with map[string]any) string {
		in, _ := json.Marshal(with)
		h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s\x00%s\x00%s", taskID, ps.Index, ps.Name, ps.Step.Action, in)))
		return hex.EncodeToString(h[:16])
	}
	ps := pipeline.PlannedStep{Index: 12, Name: "deploy é", Step: pipeline.Step{Action: "local.container_run"}}
	for _, with := range []map[string]any{{}, {"image": "shop:1.2", "ports": []any{80.0, 443.0}, "env": map[string]any{"A": "b"}}} {
		got := idempotencyKey("0b6c9d0e-8a41-4a0c-9f5e-3f1d2b7c6a55", ps, with)
		if want := original("0b6c9d0e-8a41-4a0c-9f5e-3f1d2b7c6a55", ps, with); got != want {
			t.Fatalf("with %v: key %s, want %s", with, got, want)
		}
	}
}

// TestStepsResultAsMarshal: the hand-built result is what json.Marshal
// wrote before.
func TestStepsResultAsMarshal(t *testing.T) {
	for _, outputs := range []map[string]json.RawMessage{{}, {"b": json.RawMessage(`{"x":1}`), "a \"q\"": json.RawMessage(`[1,2]`), "é<": json.RawMessage(`{}`)}} {
		want, _ := json.Marshal(map[string]any{"steps": outputs})
		if got := stepsResult(outputs); string(got) != string(want) {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
}
