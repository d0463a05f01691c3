package pipeline

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"flightdeck/workflow/task"
)

// Concurrency holds a pipeline's tasks to one running task per key and
// team (contract §6). A task holds its key from its claim until it is
// terminal, compensation included.
type Concurrency struct {
	// Key is a template over .params; "" is the default: the pipeline's
	// name and its target params (DefaultKey).
	Key    string
	Policy string // PolicyQueue (default), PolicyCancelInProgress or PolicyCancelNewest
}

// Concurrency policies: what a new task does while its key is held.
// They are the task package's, where the rule that applies them lives.
const (
	PolicyQueue            = task.PolicyQueue
	PolicyCancelInProgress = task.PolicyCancelInProgress
	PolicyCancelNewest     = task.PolicyCancelNewest
)

// Policies lists the concurrency policies.
var Policies = []string{PolicyQueue, PolicyCancelInProgress, PolicyCancelNewest}

// TargetParams are the params that name what the pipeline deploys to: the
// declared target, or every non-secret param but version.
func (p *Pipeline) TargetParams() []string {
	if p.Target != nil {
		return p.Target
	}
	out := []string{}
	for _, prm := range p.Params {
		if !prm.Secret && prm.Name != "version" {
			out = append(out, prm.Name)
		}
	}
	return out
}

// TargetOf is the target of a task with these (validated) params.
func (p *Pipeline) TargetOf(params map[string]any) map[string]any {
	out := map[string]any{}
	for _, name := range p.TargetParams() {
		if v, ok := params[name]; ok {
			out[name] = v
		}
	}
	return out
}

// KeyTemplate is the concurrency key's template as written, or the default
// spelled out; "" when the pipeline has no concurrency limit.
func (p *Pipeline) KeyTemplate() string {
	if p.Concurrency == nil {
		return ""
	}
	if p.Concurrency.Key != "" {
		return p.Concurrency.Key
	}
	parts := []string{p.Name}
	for _, name := range p.TargetParams() {
		parts = append(parts, "{{ .params."+name+" }}")
	}
	return strings.Join(parts, ":")
}

// ConcurrencyKey renders the key of a task with these (validated) params
// and returns it with the policy; "" when the pipeline has no limit.
func (p *Pipeline) ConcurrencyKey(params map[string]any) (key, policy string, err error) {
	tmpl := p.KeyTemplate()
	if tmpl == "" {
		return "", "", nil
	}
	t, err := template.New("key").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", "", fmt.Errorf("concurrency key: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, map[string]any{"params": params}); err != nil {
		return "", "", fmt.Errorf("concurrency key: %w", err)
	}
	if b.Len() == 0 || b.Len() > 512 {
		return "", "", fmt.Errorf("concurrency key: %d bytes rendered (want 1 to 512)", b.Len())
	}
	return b.String(), p.ConcurrencyPolicy(), nil
}

// ConcurrencyPolicy is the policy of the concurrency limit (queue unless set).
func (p *Pipeline) ConcurrencyPolicy() string {
	if p.Concurrency == nil || p.Concurrency.Policy == "" {
		return PolicyQueue
	}
	return p.Concurrency.Policy
}

// validTarget checks the declared target names params of p, none of them
// secret: a target is stored in the clear (tasks.target_key) and shown
// wherever its deploys are (the environments page and API, the inbox).
func (p *Pipeline) validTarget() error {
	for i, name := range p.Target {
		at := slices.IndexFunc(p.Params, func(prm Param) bool { return prm.Name == name })
		if at < 0 {
			return fmt.Errorf("target: %q is not a parameter of this pipeline", name)
		}
		if p.Params[at].Secret {
			return fmt.Errorf("target: %q is a secret parameter; a target is shown wherever its deploys are", name)
		}
		if slices.Index(p.Target, name) != i {
			return fmt.Errorf("target: %q is named twice", name)
		}
	}
	return nil
}
