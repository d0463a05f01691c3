package pipeline

// Reading YAML nodes as the loader's schema wants them: mappings as objects
// (merge keys applied, repeated and unknown keys refused), scalars of a
// given kind, and free-form values (with) as JSON-like Go values; every
// error at the node's line, with aliases followed but never in circles.

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"
)

// pair is one key and value of a YAML mapping.
type pair struct{ key, val *yaml.Node }

// mapping is a YAML mapping read as an object: merge keys (<<) applied,
// repeated keys refused. what names it in errors (step "deploy").
type mapping struct {
	node  *yaml.Node
	what  string
	pairs []pair         // in file order, merged ones last
	index map[string]int // key → position in pairs
}

func (m *mapping) get(key string) *pair {
	if i, ok := m.index[key]; ok {
		return &m.pairs[i]
	}
	return nil
}

func (m *mapping) add(p pair) {
	m.index[p.key.Value] = len(m.pairs)
	m.pairs = append(m.pairs, p)
}

// only refuses keys outside allowed, naming the first in file order.
func (m *mapping) only(l *loader, allowed ...string) error {
	for _, p := range m.pairs {
		if !slices.Contains(allowed, p.key.Value) {
			return l.errf(p.key, "%s: unknown field %q (want %s)", m.what, p.key.Value, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func (l *loader) tick(n *yaml.Node) error {
	l.budget--
	if l.budget < 0 {
		return l.errf(n, "the file expands to more than %d YAML nodes (aliases repeating aliases?)", nodeBudget)
	}
	return nil
}

// enter marks the mapping or list n (or its alias) names as being read
// until done is called, to refuse an alias inside the value it names: such
// a value never ends, and decoding into yaml.Node does not check for it.
func (l *loader) enter(n *yaml.Node, what string) (done func(), err error) {
	r := resolve(n)
	if r.Kind != yaml.MappingNode && r.Kind != yaml.SequenceNode {
		return func() {}, nil
	}
	if l.reading[r] {
		return nil, l.errf(n, "%s: alias *%s is used inside its own value", what, n.Value)
	}
	l.reading[r] = true
	return func() { delete(l.reading, r) }, nil
}

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

func (l *loader) mapping(n *yaml.Node, what string) (*mapping, error) {
	if err := l.tick(n); err != nil {
		return nil, err
	}
	done, err := l.enter(n, what)
	if err != nil {
		return nil, err
	}
	defer done()
	return l.readMapping(n, what)
}

// readMapping is mapping for a node the caller has entered.
func (l *loader) readMapping(n *yaml.Node, what string) (*mapping, error) {
	at := n
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, l.errf(at, "%s: expected a mapping, found %s", what, kindName(n))
	}
	m := &mapping{node: n, what: what, index: map[string]int{}}
	var merged []pair
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" {
			srcs := []*yaml.Node{v}
			if r := resolve(v); r.Kind == yaml.SequenceNode {
				srcs = r.Content
			}
			for _, s := range srcs {
				sub, err := l.mapping(s, what)
				if err != nil {
					return nil, err
				}
				merged = append(merged, sub.pairs...)
			}
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return nil, l.errf(k, "%s: a key must be a plain string", what)
		}
		if prev := m.get(k.Value); prev != nil {
			return nil, l.errf(k, "%s: field %q is set twice (first at line %d)", what, k.Value, prev.key.Line)
		}
		m.add(pair{k, v})
	}
	// Keys written in the mapping win over merged ones, and the first
	// merged mapping over later ones (as YAML merge keys define).
	for _, p := range merged {
		if m.get(p.key.Value) == nil {
			m.add(p)
		}
	}
	return m, nil
}

func (l *loader) seq(what string, p *pair) ([]*yaml.Node, error) {
	if err := l.tick(p.val); err != nil {
		return nil, err
	}
	n := resolve(p.val)
	switch {
	case n.Kind == yaml.SequenceNode:
		return n.Content, nil
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
		return nil, nil
	}
	return nil, l.errf(p.val, "%s: %s must be a list, found %s", what, p.key.Value, kindName(n))
}

// str reads a scalar as text, whatever YAML would type it as (name: 1.0
// is the string "1.0"); an empty value is "".
func (l *loader) str(what string, p *pair) (string, error) {
	n := resolve(p.val)
	if n.Kind != yaml.ScalarNode {
		return "", l.errf(p.val, "%s: %s must be a single value, found %s", what, p.key.Value, kindName(n))
	}
	if n.ShortTag() == "!!null" {
		return "", nil
	}
	return n.Value, nil
}

func (l *loader) strs(what string, p *pair) ([]string, []*yaml.Node, error) {
	items, err := l.seq(what, p)
	if err != nil {
		return nil, nil, err
	}
	out := make([]string, len(items))
	for i, it := range items {
		if out[i], err = l.str(what, &pair{p.key, it}); err != nil {
			return nil, nil, err
		}
	}
	return out, items, nil
}

func (l *loader) integer(what string, p *pair) (int, error) {
	n := resolve(p.val)
	var v int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		return 0, l.errf(p.val, "%s: %s must be an integer, found %s", what, p.key.Value, kindName(n))
	}
	return v, nil
}

func (l *loader) boolean(what string, p *pair) (bool, error) {
	n := resolve(p.val)
	var v bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		return false, l.errf(p.val, "%s: %s must be true or false, found %s", what, p.key.Value, kindName(n))
	}
	return v, nil
}

// value converts a YAML value to the JSON-like shapes the rest of flightdeck
// uses: string, int, float64, bool, nil, []any and map[string]any (never
// map[any]any). Timestamps and binaries stay their text. check, if set,
// vets every string (with: templates); at names the place ("with.command[1]").
func (l *loader) value(n *yaml.Node, at string, check func(s string, n *yaml.Node, at string) error) (any, error) {
	if err := l.tick(n); err != nil {
		return nil, err
	}
	// Held until the children are read: an alias among them may name n.
	done, err := l.enter(n, at)
	if err != nil {
		return nil, err
	}
	defer done()
	r := resolve(n)
	switch r.Kind {
	case yaml.ScalarNode:
		switch r.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := r.Decode(&b); err != nil {
				return nil, l.errf(n, "%s: %v", at, err)
			}
			return b, nil
		case "!!int":
			var i int
			if err := r.Decode(&i); err != nil {
				return nil, l.errf(n, "%s: %s is not an integer Go can hold", at, r.Value)
			}
			return i, nil
		case "!!float":
			var f float64
			if err := r.Decode(&f); err != nil {
				return nil, l.errf(n, "%s: %v", at, err)
			}
			return f, nil
		case "!!str", "!!timestamp", "!!binary":
			if check != nil {
				if err := check(r.Value, n, at); err != nil {
					return nil, err
				}
			}
			return r.Value, nil
		}
		return nil, l.errf(n, "%s: unsupported YAML tag %s", at, r.Tag)
	case yaml.SequenceNode:
		out := make([]any, len(r.Content))
		for i, c := range r.Content {
			v, err := l.value(c, fmt.Sprintf("%s[%d]", at, i), check)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.MappingNode:
		m, err := l.readMapping(n, at)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m.pairs))
		for _, p := range m.pairs {
			v, err := l.value(p.val, at+"."+p.key.Value, check)
			if err != nil {
				return nil, err
			}
			out[p.key.Value] = v
		}
		return out, nil
	}
	return nil, l.errf(n, "%s: unsupported YAML node", at)
}
