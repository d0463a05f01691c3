package pipeline

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// ActionSchema is what the loader knows of one action a server has.
type ActionSchema struct {
	// Inputs are the with fields the action takes; nil takes any.
	Inputs []string
	// Check, if set, validates a step's with as loaded (templates not yet
	// rendered) and names the field at fault.
	Check func(with map[string]any) (field string, err error)
}

// CheckActions refuses a catalog with a step (or compensation) naming an
// action the server does not have, or a with its action cannot take
// (contract §6: such a pipeline does not load). The error is a *LoadError
// at the step's line. The catalog is checked once the server's actions are
// known, which parsing a file alone does not know.
func (c *Catalog) CheckActions(actions map[string]ActionSchema) error {
	for _, p := range c.All() {
		if err := p.checkActions(actions); err != nil {
			return err
		}
	}
	return nil
}

func (p *Pipeline) checkActions(actions map[string]ActionSchema) error {
	var leaves []Step
	for _, s := range p.Steps {
		switch {
		case s.Parallel != nil:
			leaves = append(leaves, s.Parallel.Steps...)
		case s.ForEach != nil:
			leaves = append(leaves, s.ForEach.Step)
		default:
			leaves = append(leaves, s)
		}
	}
	for _, s := range leaves {
		if err := p.checkAction(actions, s.Name, fmt.Sprintf("step %q", s.Name), s.Action, s.With); err != nil {
			return err
		}
		if s.Compensate != nil {
			if err := p.checkAction(actions, s.Name+"/compensate", fmt.Sprintf("step %q: compensate", s.Name), s.Compensate.Action, s.Compensate.With); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *Pipeline) checkAction(actions map[string]ActionSchema, key, what, name string, with map[string]any) error {
	sc, ok := actions[name]
	if !ok {
		known := make([]string, 0, len(actions))
		for n := range actions {
			known = append(known, n)
		}
		sort.Strings(known)
		return p.loadErr(key, "%s: action %q is not an action of this server (it has %s)", what, name, strings.Join(known, ", "))
	}
	if sc.Inputs != nil {
		keys := make([]string, 0, len(with))
		for k := range with {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !slices.Contains(sc.Inputs, k) {
				return p.loadErr(key+"/with."+k, "%s: %s takes no with.%s (it takes %s)", what, name, k, strings.Join(sc.Inputs, ", "))
			}
		}
	}
	if sc.Check != nil {
		if field, err := sc.Check(with); err != nil {
			at := key + "/with." + strings.SplitN(field, ".", 2)[0]
			if _, ok := p.lines[at]; !ok {
				at = key + "/with"
			}
			if _, ok := p.lines[at]; !ok {
				at = key
			}
			return p.loadErr(at, "%s: %v", what, err)
		}
	}
	return nil
}

func (p *Pipeline) loadErr(key, format string, args ...any) error {
	file, line := p.file, p.lines[key]
	if file == "" {
		file = "built-in pipeline " + p.Name
	}
	return &LoadError{Path: file, Line: max(line, 1), Reason: fmt.Sprintf(format, args...)}
}
