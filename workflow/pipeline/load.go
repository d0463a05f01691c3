package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"gopkg.in/yaml.v3"
)

// LoadDir loads every *.yaml and *.yml file directly in dir, one pipeline a
// file. Any file that does not load fails the whole load, naming path and
// line: a server must not start with half its pipelines.
func LoadDir(dir string) ([]*Pipeline, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("error reading pipelines folder: %w", err)
	}
	var names []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out []*Pipeline
	seen := map[string]string{}
	for _, n := range names {
		p, err := LoadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[p.Name]; dup {
			return nil, fmt.Errorf("%s: pipeline %q is also defined in %s", filepath.Join(dir, n), p.Name, prev)
		}
		seen[p.Name] = filepath.Join(dir, n)
		out = append(out, p)
	}
	return out, nil
}

// LoadFile loads one pipeline file.
func LoadFile(path string) (*Pipeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(path)
	p, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	p.Dir = filepath.Dir(abs)
	return p, nil
}

// The file format (contract section 6).
type fileStep struct {
	Name                string         `yaml:"name"`
	Action              string         `yaml:"action"`
	With                map[string]any `yaml:"with"`
	Compensate          *fileComp      `yaml:"compensate"`
	Timeout             string         `yaml:"timeout"`
	Retries             *int           `yaml:"retries"`
	CompensateOnFailure bool           `yaml:"compensate_on_failure"`
	Approval            *fileApproval  `yaml:"approval"`
	Parallel            *fileGroup     `yaml:"parallel"`
	ForEach             string         `yaml:"for_each"`
	Concurrency         int            `yaml:"concurrency"`
	Join                string         `yaml:"join"`
	Step                *fileStep      `yaml:"step"`
}

type fileComp struct {
	Action  string         `yaml:"action"`
	With    map[string]any `yaml:"with"`
	Retries *int           `yaml:"retries"`
	Timeout string         `yaml:"timeout"`
}

type fileApproval struct {
	When    string   `yaml:"when"`
	Roles   []string `yaml:"roles"`
	Timeout string   `yaml:"timeout"`
}

type fileGroup struct {
	Join    string      `yaml:"join"`
	Timeout string      `yaml:"timeout"`
	Steps   []yaml.Node `yaml:"steps"`
}

type fileParam struct {
	Name     string   `yaml:"name"`
	Type     string   `yaml:"type"`
	Pattern  string   `yaml:"pattern"`
	Values   []string `yaml:"values"`
	Min      *int64   `yaml:"min"`
	Max      *int64   `yaml:"max"`
	Default  any      `yaml:"default"`
	Required bool     `yaml:"required"`
	Secret   bool     `yaml:"secret"`
}

var pipelineName = regexp.MustCompile(`^[a-z0-9-]+$`)

// loadErr names the file and line of a problem.
type loadErr struct {
	path string
}

func (l loadErr) at(n *yaml.Node, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return fmt.Errorf("%s:%d: %s", l.path, line, fmt.Sprintf(format, args...))
}

// strictDecode decodes n into v and refuses keys v does not declare, naming
// the line of the offending key.
func (l loadErr) strictDecode(n *yaml.Node, v any) error {
	if n.Kind != yaml.MappingNode {
		return l.at(n, "expected a mapping")
	}
	allowed := yamlKeys(reflect.TypeOf(v).Elem())
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !allowed[k.Value] {
			return l.at(k, "unknown field %q", k.Value)
		}
	}
	if err := n.Decode(v); err != nil {
		return fmt.Errorf("%s: %s", l.path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return nil
}

func yamlKeys(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		if tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; tag != "" {
			out[tag] = true
		}
	}
	return out
}

// Parse reads one pipeline document.
func Parse(path string, data []byte) (*Pipeline, error) {
	le := loadErr{path}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, le.at(&doc, "a pipeline file holds one mapping with name, params and steps")
	}
	root := doc.Content[0]
	var top struct {
		Name        string      `yaml:"name"`
		Description string      `yaml:"description"`
		Params      []yaml.Node `yaml:"params"`
		Steps       []yaml.Node `yaml:"steps"`
	}
	if err := le.strictDecode(root, &top); err != nil {
		return nil, err
	}
	if !pipelineName.MatchString(top.Name) {
		return nil, le.at(root, "name %q must match [a-z0-9-]+", top.Name)
	}
	p := &Pipeline{Name: top.Name, Description: top.Description}
	params := map[string]string{}
	for i := range top.Params {
		n := &top.Params[i]
		var fp fileParam
		if err := le.strictDecode(n, &fp); err != nil {
			return nil, err
		}
		prm := Param{Name: fp.Name, Type: fp.Type, Pattern: fp.Pattern, Values: fp.Values, Min: fp.Min, Max: fp.Max,
			Default: normalizeYAML(fp.Default), Required: fp.Required, Secret: fp.Secret}
		if err := prm.compile(); err != nil {
			return nil, le.at(n, "%v", err)
		}
		if _, dup := params[prm.Name]; dup {
			return nil, le.at(n, "parameter %s declared twice", prm.Name)
		}
		params[prm.Name] = prm.Type
		p.Params = append(p.Params, prm)
	}
	if len(top.Steps) == 0 {
		return nil, le.at(root, "a pipeline needs at least one step")
	}
	names := map[string]bool{}
	for i := range top.Steps {
		st, err := le.step(&top.Steps[i], names, params, true)
		if err != nil {
			return nil, err
		}
		p.Steps = append(p.Steps, st)
	}
	return p, nil
}

func (le loadErr) step(n *yaml.Node, names map[string]bool, params map[string]string, groupsAllowed bool) (Step, error) {
	var fs fileStep
	if err := le.strictDecode(n, &fs); err != nil {
		return Step{}, err
	}
	kinds := 0
	for _, set := range []bool{fs.Action != "", fs.Parallel != nil, fs.ForEach != ""} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return Step{}, le.at(n, "a step has exactly one of action, parallel or for_each")
	}
	if !groupsAllowed && fs.Action == "" {
		return Step{}, le.at(n, "groups cannot be nested")
	}
	var st Step
	var err error
	switch {
	case fs.Parallel != nil:
		g := &Group{}
		if g.Join, g.Quorum, err = parseJoin(fs.Parallel.Join, len(fs.Parallel.Steps)); err != nil {
			return Step{}, le.at(n, "%v", err)
		}
		if g.Timeout, err = parseDuration(fs.Parallel.Timeout, 0); err != nil {
			return Step{}, le.at(n, "parallel timeout: %v", err)
		}
		for i := range fs.Parallel.Steps {
			s, err := le.step(&fs.Parallel.Steps[i], names, params, false)
			if err != nil {
				return Step{}, err
			}
			g.Steps = append(g.Steps, s)
		}
		st.Parallel = g
		return st, nil
	case fs.ForEach != "":
		m := itemsRef.FindStringSubmatch(fs.ForEach)
		if m == nil || params[m[1]] != "list" {
			return Step{}, le.at(n, "for_each must be {{ .params.NAME }} naming a list parameter")
		}
		if fs.Step == nil {
			return Step{}, le.at(n, "for_each needs a step")
		}
		if fs.Concurrency < 0 {
			return Step{}, le.at(n, "concurrency must not be negative")
		}
		fe := &ForEach{Items: fs.ForEach, Concurrency: fs.Concurrency}
		if fe.Join, fe.Quorum, err = parseJoin(fs.Join, 1<<30); err != nil {
			return Step{}, le.at(n, "%v", err)
		}
		stepNode := findKey(n, "step")
		inner, err := le.step(stepNode, names, params, false)
		if err != nil {
			return Step{}, err
		}
		fe.Step = inner
		st.ForEach = fe
		return st, nil
	}
	if fs.Name == "" {
		return Step{}, le.at(n, "a step needs a name")
	}
	if names[fs.Name] {
		return Step{}, le.at(n, "step name %q is used twice", fs.Name)
	}
	names[fs.Name] = true
	st = Step{Name: fs.Name, Action: fs.Action, With: normalizeMap(fs.With), CompensateOnFailure: fs.CompensateOnFailure}
	if err := checkTemplates(st.With); err != nil {
		return Step{}, le.at(n, "step %s: with: %v", fs.Name, err)
	}
	if st.Timeout, err = parseDuration(fs.Timeout, StepTimeoutDefault); err != nil {
		return Step{}, le.at(n, "step %s: timeout: %v", fs.Name, err)
	}
	if fs.Retries != nil {
		if *fs.Retries < 0 || *fs.Retries > 20 {
			return Step{}, le.at(n, "step %s: retries must be between 0 and 20", fs.Name)
		}
		st.Retries = *fs.Retries
	}
	if c := fs.Compensate; c != nil {
		if c.Action == "" {
			return Step{}, le.at(n, "step %s: compensate needs an action", fs.Name)
		}
		comp := &Compensation{Action: c.Action, With: normalizeMap(c.With), Retries: CompensationRetriesDefault}
		if c.Retries != nil {
			if *c.Retries < 0 || *c.Retries > 20 {
				return Step{}, le.at(n, "step %s: compensate retries must be between 0 and 20", fs.Name)
			}
			comp.Retries = *c.Retries
		}
		if comp.Timeout, err = parseDuration(c.Timeout, StepTimeoutDefault); err != nil {
			return Step{}, le.at(n, "step %s: compensate timeout: %v", fs.Name, err)
		}
		if err := checkTemplates(comp.With); err != nil {
			return Step{}, le.at(n, "step %s: compensate with: %v", fs.Name, err)
		}
		st.Compensate = comp
	}
	if a := fs.Approval; a != nil {
		ap := &Approval{When: a.When, Roles: a.Roles}
		if len(ap.Roles) == 0 {
			ap.Roles = []string{"approver", "admin"}
		}
		for _, r := range ap.Roles {
			switch r {
			case "viewer", "deployer", "approver", "admin":
			default:
				return Step{}, le.at(n, "step %s: unknown approval role %q", fs.Name, r)
			}
		}
		if ap.When != "" {
			if _, err := template.New("when").Parse(ap.When); err != nil {
				return Step{}, le.at(n, "step %s: approval.when: %v", fs.Name, err)
			}
		}
		if ap.Timeout, err = parseDuration(a.Timeout, ApprovalTimeoutDefault); err != nil {
			return Step{}, le.at(n, "step %s: approval timeout: %v", fs.Name, err)
		}
		st.Approval = ap
	}
	return st, nil
}

func findKey(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return n
}

func parseJoin(s string, size int) (string, int, error) {
	switch {
	case s == "" || s == "all":
		return "all", 0, nil
	case s == "any":
		return "any", 0, nil
	case strings.HasPrefix(s, "quorum:"):
		q, err := strconv.Atoi(strings.TrimPrefix(s, "quorum:"))
		if err != nil || q < 1 || q > size {
			return "", 0, fmt.Errorf("join %q: quorum must be between 1 and the number of steps", s)
		}
		return "quorum", q, nil
	}
	return "", 0, fmt.Errorf("join %q: want all, any or quorum:N", s)
}

func parseDuration(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration like 30s or 5m", s)
	}
	return d, nil
}

// checkTemplates parses every string in with as a Go template.
func checkTemplates(v any) error {
	switch x := v.(type) {
	case string:
		if strings.Contains(x, "{{") {
			if _, err := template.New("with").Parse(x); err != nil {
				return err
			}
		}
	case []any:
		for _, it := range x {
			if err := checkTemplates(it); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, it := range x {
			if err := checkTemplates(it); err != nil {
				return err
			}
		}
	}
	return nil
}

// normalizeYAML turns yaml.v3 values into the JSON-like shapes the rest of
// flightdeck uses (map[string]any, []any, int64).
func normalizeYAML(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return normalizeMap(x)
	case []any:
		out := make([]any, len(x))
		for i, it := range x {
			out[i] = normalizeYAML(it)
		}
		return out
	case int:
		return int64(x)
	}
	return v
}

func normalizeMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = normalizeYAML(v)
	}
	return out
}
