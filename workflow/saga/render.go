package saga

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/template"

	"flightdeck/workflow/pipeline"
)

// render applies the step's templates to every string in with, recursively.
// Values are rendered as text and never reach a shell: exec takes argv.
func render(with map[string]any, data map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(with))
	for k, v := range with {
		r, err := renderValue(v, data)
		if err != nil {
			return nil, fmt.Errorf("with.%s: %w", k, err)
		}
		out[k] = r
	}
	return out, nil
}

func renderValue(v any, data map[string]any) (any, error) {
	switch x := v.(type) {
	case string:
		return renderString(x, data)
	case []any:
		out := make([]any, len(x))
		for i, it := range x {
			r, err := renderValue(it, data)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case []string:
		out := make([]any, len(x))
		for i, it := range x {
			r, err := renderString(it, data)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		return render(x, data)
	}
	return v, nil
}

func renderString(s string, data map[string]any) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	t, err := template.New("with").Option("missingkey=error").Parse(s)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// idempotencyKey derives a step's key from the task, the step and its
// rendered inputs: the same for every attempt of that step in that task.
func idempotencyKey(taskID string, ps pipeline.PlannedStep, with map[string]any) string {
	in := []byte("{}") // what an empty map marshals to, without the reflection
	if len(with) > 0 {
		in, _ = json.Marshal(with) // maps marshal with sorted keys
	}
	// The hash of taskID NUL index NUL name NUL action NUL inputs; keys of
	// stored steps depend on these exact bytes.
	b := make([]byte, 0, len(taskID)+len(ps.Name)+len(ps.Step.Action)+len(in)+24)
	b = append(append(b, taskID...), 0)
	b = append(strconv.AppendInt(b, int64(ps.Index), 10), 0)
	b = append(append(b, ps.Name...), 0)
	b = append(append(b, ps.Step.Action...), 0)
	h := sha256.Sum256(append(b, in...))
	return hex.EncodeToString(h[:16])
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
