package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"

	"flightdeck/workflow/environment"
	"flightdeck/workflow/task"
)

// EnvironmentsFile is the file beside the pipelines that holds the
// environments' rules (contract §9).
const EnvironmentsFile = "environments.yaml"

// EnvironmentParam names the param whose value is a deploy's environment:
// the pipeline's environment field, else env when it has one, else ""
// (its deploys go to no environment and no rule applies).
func (p *Pipeline) EnvironmentParam() string {
	if p.Environment != "" {
		return p.Environment
	}
	for _, prm := range p.Params {
		if prm.Name == "env" {
			return "env"
		}
	}
	return ""
}

// EnvironmentOf is the environment a deploy with params goes to ("" for none).
func (p *Pipeline) EnvironmentOf(params map[string]any) string {
	name := p.EnvironmentParam()
	if name == "" {
		return ""
	}
	switch v := params[name].(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

var envName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// LoadEnvironments reads dir's environments.yaml; a folder without one
// has no rules (and an empty dir, the built-ins only, neither).
func LoadEnvironments(dir string) (*environment.Rules, error) {
	if dir == "" {
		return environment.NewRules(), nil
	}
	path := filepath.Join(dir, EnvironmentsFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return environment.NewRules(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("error reading %s: %w", path, err)
	}
	return ParseEnvironments(path, data)
}

// ParseEnvironments reads an environments.yaml document; path names it in
// errors (*LoadError, with the line).
func ParseEnvironments(path string, data []byte) (*environment.Rules, error) {
	l := newLoader(path)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return environment.NewRules(), nil
		}
		return nil, l.syntaxErr(err, data)
	}
	if len(doc.Content) == 0 {
		return environment.NewRules(), nil
	}
	top, err := l.mapping(doc.Content[0], "environments.yaml")
	if err != nil {
		return nil, err
	}
	if err := top.only(l, "environments"); err != nil {
		return nil, err
	}
	envsPair := top.get("environments")
	if envsPair == nil {
		return environment.NewRules(), nil
	}
	envs, err := l.mapping(envsPair.val, "environments")
	if err != nil {
		return nil, err
	}
	var out []*environment.Env
	names := map[string]*yaml.Node{}
	for _, p := range envs.pairs {
		if !envName.MatchString(p.key.Value) {
			return nil, l.errf(p.key, "environments: %q is not an environment name (letters, digits, . _ -)", p.key.Value)
		}
		e, err := l.environment(p)
		if err != nil {
			return nil, err
		}
		names[e.Name] = p.key
		out = append(out, e)
	}
	for _, e := range out {
		if e.PromoteTo == e.Name {
			return nil, l.errf(names[e.Name], "environment %s: promote_to names itself", e.Name)
		}
		if e.Requires != nil && e.Requires.Env == e.Name {
			return nil, l.errf(names[e.Name], "environment %s: requires names itself", e.Name)
		}
	}
	return environment.NewRules(out...), nil
}

func (l *loader) environment(p pair) (*environment.Env, error) {
	what := "environment " + p.key.Value
	e := &environment.Env{Name: p.key.Value}
	if resolve(p.val).ShortTag() == "!!null" {
		return e, nil // "staging:" with nothing under it: no rules
	}
	m, err := l.mapping(p.val, what)
	if err != nil {
		return nil, err
	}
	if err := m.only(l, "promote_to", "reviewers", "wait", "versions", "requires", "freeze", "on_failure"); err != nil {
		return nil, err
	}
	if v := m.get("promote_to"); v != nil {
		if e.PromoteTo, err = l.envRef(what, v); err != nil {
			return nil, err
		}
	}
	if v := m.get("reviewers"); v != nil {
		if e.Reviewers, err = l.reviewers(what, v); err != nil {
			return nil, err
		}
	}
	if v := m.get("wait"); v != nil {
		if e.Wait, err = l.duration(what, v); err != nil {
			return nil, err
		}
		if e.Wait > environment.MaxRunAhead {
			return nil, l.errf(v.val, "%s: wait must be at most %s", what, environment.MaxRunAhead)
		}
	}
	if v := m.get("versions"); v != nil {
		s, err := l.str(what, v)
		if err != nil {
			return nil, err
		}
		if e.Versions, err = regexp.Compile(s); err != nil || s == "" {
			return nil, l.errf(v.val, "%s: versions %q is not a regular expression", what, s)
		}
	}
	if v := m.get("requires"); v != nil {
		rm, err := l.mapping(v.val, what+": requires")
		if err != nil {
			return nil, err
		}
		if err := rm.only(l, "env", "soak"); err != nil {
			return nil, err
		}
		e.Requires = &environment.Requires{}
		ep := rm.get("env")
		if ep == nil {
			return nil, l.errf(v.val, "%s: requires needs env (the environment the version must have completed in)", what)
		}
		if e.Requires.Env, err = l.envRef(what+": requires", ep); err != nil {
			return nil, err
		}
		if sp := rm.get("soak"); sp != nil {
			if e.Requires.Soak, err = l.duration(what+": requires", sp); err != nil {
				return nil, err
			}
		}
	}
	if v := m.get("freeze"); v != nil {
		items, err := l.seq(what, v)
		if err != nil {
			return nil, err
		}
		for i, n := range items {
			w, err := l.window(fmt.Sprintf("%s: freeze %d", what, i+1), n)
			if err != nil {
				return nil, err
			}
			e.Freeze = append(e.Freeze, w)
		}
	}
	if v := m.get("on_failure"); v != nil {
		if e.OnFailure, err = l.str(what, v); err != nil {
			return nil, err
		}
		if e.OnFailure != "ask" && e.OnFailure != "rollback" {
			return nil, l.errf(v.val, "%s: on_failure %q (want ask or rollback)", what, e.OnFailure)
		}
		if e.OnFailure == "rollback" {
			e.OnFailure = ""
		}
	}
	return e, nil
}

func (l *loader) envRef(what string, p *pair) (string, error) {
	s, err := l.str(what, p)
	if err != nil {
		return "", err
	}
	if !envName.MatchString(s) {
		return "", l.errf(p.val, "%s: %s %q is not an environment name", what, p.key.Value, s)
	}
	return s, nil
}

func (l *loader) reviewers(what string, p *pair) (*environment.Reviewers, error) {
	what += ": reviewers"
	m, err := l.mapping(p.val, what)
	if err != nil {
		return nil, err
	}
	if err := m.only(l, "count", "roles", "timeout"); err != nil {
		return nil, err
	}
	r := &environment.Reviewers{Count: 1, Roles: environment.ReviewerRolesDefault, Timeout: environment.ReviewersTimeoutDefault}
	if c := m.get("count"); c != nil {
		if r.Count, err = l.integer(what, c); err != nil {
			return nil, err
		}
		if r.Count < 1 || r.Count > 10 {
			return nil, l.errf(c.val, "%s: count %d must be between 1 and 10", what, r.Count)
		}
	}
	if rp := m.get("roles"); rp != nil {
		roles, nodes, err := l.strs(what, rp)
		if err != nil {
			return nil, err
		}
		if len(roles) == 0 {
			return nil, l.errf(rp.val, "%s: roles is empty (leave it out for %s)", what, strings.Join(environment.ReviewerRolesDefault, " and "))
		}
		for i, role := range roles {
			if _, err := task.ParseRole(role); err != nil {
				return nil, l.errf(nodes[i], "%s: %v", what, err)
			}
		}
		r.Roles = roles
	}
	if t := m.get("timeout"); t != nil {
		if r.Timeout, err = l.duration(what, t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (l *loader) window(what string, n *yaml.Node) (environment.Window, error) {
	m, err := l.mapping(n, what)
	if err != nil {
		return environment.Window{}, err
	}
	if err := m.only(l, "from", "to", "tz", "reason"); err != nil {
		return environment.Window{}, err
	}
	vals := map[string]string{}
	for _, k := range []string{"from", "to", "tz", "reason"} {
		if p := m.get(k); p != nil {
			if vals[k], err = l.str(what, p); err != nil {
				return environment.Window{}, err
			}
		} else if k == "from" || k == "to" {
			return environment.Window{}, l.errf(n, "%s: %s is missing (like \"Fri 16:00\" or \"22:00\")", what, k)
		}
	}
	w, err := environment.ParseWindow(vals["from"], vals["to"], vals["tz"], vals["reason"])
	if err != nil {
		return environment.Window{}, l.errf(n, "%s: %v", what, err)
	}
	if w.Reason == "" {
		w.Reason = "freeze window " + w.Text
	}
	return w, nil
}

// EnvironmentKnown reports whether a deploy can go to the environment name:
// environments.yaml names it, or a pipeline's environment parameter can
// take it (one of an enum's values, or a string its pattern allows). Known
// lists the names there are (the rules' and the enums' values, sorted):
// what a freeze or a person's message can offer (contract §9).
func (c *Catalog) EnvironmentKnown(name string) (ok bool, known []string) {
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			known = append(known, n)
		}
	}
	for _, e := range c.Environments().All() {
		add(e.Name)
	}
	for _, p := range c.All() {
		prm := p.param(p.EnvironmentParam())
		switch {
		case prm == nil:
		case prm.Type == "enum":
			for _, v := range prm.Values {
				add(v)
			}
		case prm.Type == "string" && name != "" && (prm.re == nil || prm.re.MatchString(name)):
			ok = true // a free-form environment param can take it
		}
	}
	slices.Sort(known)
	return ok || seen[name], known
}

// param is the parameter named name, nil for none.
func (p *Pipeline) param(name string) *Param {
	for i := range p.Params {
		if p.Params[i].Name == name {
			return &p.Params[i]
		}
	}
	return nil
}
