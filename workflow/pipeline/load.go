package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"go.yaml.in/yaml/v4"

	"flightdeck/workflow/task"
)

// LoadError is a pipeline file that does not load, with the place to fix.
type LoadError struct {
	Path   string
	Line   int // 1-based
	Reason string
}

func (e *LoadError) Error() string { return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Reason) }

// LoadDir loads every *.yaml and *.yml file directly in dir (subfolders and
// dotfiles such as editor lock files are skipped), one pipeline a file. Any
// file that does not load fails the whole load: a server must not start with
// half its pipelines. Two files with the same name are an error too; a file
// replacing a built-in is the caller's choice (NewCatalog keeps the last).
func LoadDir(dir string) ([]*Pipeline, error) {
	entries, err := os.ReadDir(dir) // sorted by name: stable order and errors
	if err != nil {
		return nil, fmt.Errorf("error reading pipelines folder: %w", err)
	}
	var out []*Pipeline
	seen := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		// environments.yaml holds the environments' rules (LoadEnvironments)
		if strings.HasPrefix(name, ".") || (ext != ".yaml" && ext != ".yml") || e.IsDir() || name == EnvironmentsFile {
			continue
		}
		path := filepath.Join(dir, name)
		if e.Type()&fs.ModeSymlink != 0 {
			if fi, err := os.Stat(path); err == nil && fi.IsDir() {
				continue
			} // a dangling link is reported by loadFile
		}
		p, nameLine, err := loadFile(path)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[p.Name]; dup {
			return nil, &LoadError{Path: path, Line: nameLine, Reason: fmt.Sprintf("pipeline %q is also defined in %s", p.Name, prev)}
		}
		seen[p.Name] = path
		out = append(out, p)
	}
	return out, nil
}

// LoadFile loads one pipeline file and sets its Dir to the file's folder
// (absolute), where its exec steps run.
func LoadFile(path string) (*Pipeline, error) {
	p, _, err := loadFile(path)
	return p, err
}

func loadFile(path string) (*Pipeline, int, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, 0, fmt.Errorf("error resolving pipeline file: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("error reading pipeline file: %w", err)
	}
	l := newLoader(path)
	p, err := l.parse(data)
	if err != nil {
		return nil, 0, err
	}
	p.Dir = filepath.Dir(abs)
	return p, l.nameLine, nil
}

// Parse reads one pipeline document; path only names it in errors, and Dir
// stays "" (the server's working directory, as for built-ins). Errors are
// *LoadError.
func Parse(path string, data []byte) (*Pipeline, error) {
	return newLoader(path).parse(data)
}

var pipelineName = regexp.MustCompile(`^[a-z0-9-]+$`)

// nodeBudget bounds the YAML nodes one file may expand to: aliases can make
// a small file huge (a "billion laughs").
const nodeBudget = 100_000

// maxRetries bounds retries of steps and compensations.
const maxRetries = 20

// maxListItems is the most items a list parameter takes (see check), so
// the largest quorum a for_each can ask for.
const maxListItems = 100

// loader parses one file. The schema is walked by hand over yaml.Node rather
// than decoded into structs, so that every problem names the line of the
// field at fault and unknown or repeated fields are refused.
type loader struct {
	path     string
	budget   int
	nameLine int
	params   map[string]*Param
	paramAt  map[string]int // parameter name → line
	stepAt   map[string]int // step name → line
	inEach   bool           // parsing the step of a for_each: .item is set
	// paramsOnly: a template rendered at submit (the concurrency key),
	// which sees .params only
	paramsOnly bool
	reading    map[*yaml.Node]bool
	// lines are where steps name their actions and inputs, for checks
	// made once the server's actions are known (Catalog.CheckActions).
	lines map[string]int
}

func newLoader(path string) *loader {
	return &loader{path: path, budget: nodeBudget, params: map[string]*Param{}, paramAt: map[string]int{}, stepAt: map[string]int{},
		reading: map[*yaml.Node]bool{}, lines: map[string]int{}}
}

func (l *loader) errf(n *yaml.Node, format string, args ...any) error {
	line := 1
	if n != nil && n.Line > 0 {
		line = n.Line
	}
	return &LoadError{Path: l.path, Line: line, Reason: fmt.Sprintf(format, args...)}
}

// syntaxErr turns the YAML library's typed load error into a LoadError at
// its line. A problem found at the end of the input (an unclosed list) is
// reported on the file's last line rather than one past it.
func (l *loader) syntaxErr(err error, data []byte) error {
	var le *yaml.LoadError
	if !errors.As(err, &le) {
		return &LoadError{Path: l.path, Line: 1, Reason: "invalid YAML: " + err.Error()}
	}
	last := max(1, bytes.Count(bytes.TrimRight(data, "\n"), []byte("\n"))+1)
	reason := "invalid YAML: " + le.Message
	if le.ContextMsg != "" && le.ContextMark.Line > 0 && le.ContextMark.Line != le.Mark.Line {
		reason += fmt.Sprintf(" (%s from line %d)", le.ContextMsg, le.ContextMark.Line)
	}
	return &LoadError{Path: l.path, Line: min(max(1, le.Mark.Line), last), Reason: reason}
}

func (l *loader) parse(data []byte) (*Pipeline, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, l.errf(nil, "empty file: a pipeline needs a name and steps")
		}
		return nil, l.syntaxErr(err, data)
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, l.syntaxErr(err, data)
		}
		// A trailing "---" with nothing after it is harmless.
		if len(next.Content) > 0 && (next.Content[0].ShortTag() != "!!null" || next.Content[0].Value != "") {
			return nil, l.errf(&next, "a second YAML document: a file holds one pipeline")
		}
	}
	if len(doc.Content) == 0 {
		return nil, l.errf(&doc, "empty file: a pipeline needs a name and steps")
	}
	m, err := l.mapping(doc.Content[0], "pipeline")
	if err != nil {
		return nil, err
	}
	if err := m.only(l, "name", "description", "params", "target", "concurrency", "environment", "steps", "on_failure", "decision_timeout", "links"); err != nil {
		return nil, err
	}
	p := &Pipeline{}
	name := m.get("name")
	if name == nil {
		return nil, l.errf(m.node, "pipeline: name is missing")
	}
	if p.Name, err = l.str("pipeline", name); err != nil {
		return nil, err
	}
	if !pipelineName.MatchString(p.Name) {
		return nil, l.errf(name.val, "pipeline: name %q must match ^[a-z0-9-]+$", p.Name)
	}
	l.nameLine = name.val.Line
	if d := m.get("description"); d != nil {
		if p.Description, err = l.str("pipeline", d); err != nil {
			return nil, err
		}
	}
	// Parameters first: steps refer to them (for_each, templates).
	if ps := m.get("params"); ps != nil {
		items, err := l.seq("pipeline", ps)
		if err != nil {
			return nil, err
		}
		for i, n := range items {
			prm, err := l.param(n, i)
			if err != nil {
				return nil, err
			}
			p.Params = append(p.Params, prm)
		}
		for i := range p.Params {
			l.params[p.Params[i].Name] = &p.Params[i]
		}
	}
	if t := m.get("target"); t != nil {
		if p.Target, _, err = l.strs("pipeline", t); err != nil {
			return nil, err
		}
		if p.Target == nil {
			p.Target = []string{}
		}
		if err := p.validTarget(); err != nil {
			return nil, l.errf(t.val, "pipeline: %v", err)
		}
	}
	if e := m.get("environment"); e != nil {
		if p.Environment, err = l.str("pipeline", e); err != nil {
			return nil, err
		}
		at := slices.IndexFunc(p.Params, func(prm Param) bool { return prm.Name == p.Environment })
		switch {
		case at < 0:
			return nil, l.errf(e.val, "pipeline: environment %q is not a parameter of this pipeline", p.Environment)
		case p.Params[at].Secret:
			return nil, l.errf(e.val, "pipeline: environment %q is a secret parameter; an environment is shown", p.Environment)
		}
	}
	if c := m.get("concurrency"); c != nil {
		if p.Concurrency, err = l.concurrency(c); err != nil {
			return nil, err
		}
	}
	if f := m.get("on_failure"); f != nil {
		if p.OnFailure, err = l.str("pipeline", f); err != nil {
			return nil, err
		}
		switch p.OnFailure {
		case OnFailureAsk:
		case "compensate":
			p.OnFailure = ""
		default:
			return nil, l.errf(f.val, "pipeline: on_failure %q (want ask or compensate)", p.OnFailure)
		}
	}
	if d := m.get("decision_timeout"); d != nil {
		if p.DecisionTimeout, err = l.duration("pipeline", d); err != nil {
			return nil, err
		}
	}
	if lk := m.get("links"); lk != nil {
		if p.Links, err = l.links(lk, p); err != nil {
			return nil, err
		}
	}
	steps := m.get("steps")
	if steps == nil {
		return nil, l.errf(m.node, "pipeline: steps are missing")
	}
	items, err := l.seq("pipeline", steps)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, l.errf(steps.key, "pipeline: a pipeline needs at least one step")
	}
	for i, n := range items {
		st, err := l.step(n, fmt.Sprintf("step %d", i+1), false)
		if err != nil {
			return nil, err
		}
		p.Steps = append(p.Steps, st)
	}
	p.file, p.lines = l.path, l.lines
	return p, nil
}

// concurrency reads the concurrency block: a key template over .params
// only (it is rendered when the task is submitted) and a policy.
func (l *loader) concurrency(p *pair) (*Concurrency, error) {
	m, err := l.mapping(p.val, "concurrency")
	if err != nil {
		return nil, err
	}
	if err := m.only(l, "key", "policy"); err != nil {
		return nil, err
	}
	c := &Concurrency{Policy: PolicyQueue}
	if k := m.get("key"); k != nil {
		if c.Key, err = l.str("concurrency", k); err != nil {
			return nil, err
		}
		if strings.TrimSpace(c.Key) == "" {
			return nil, l.errf(k.val, "concurrency: key is empty (leave it out for the default)")
		}
		l.paramsOnly = true
		err := l.template(c.Key, k.val, "concurrency: key")
		l.paramsOnly = false
		if err != nil {
			return nil, err
		}
	}
	if pol := m.get("policy"); pol != nil {
		if c.Policy, err = l.str("concurrency", pol); err != nil {
			return nil, err
		}
		if !slices.Contains(Policies, c.Policy) {
			return nil, l.errf(pol.val, "concurrency: policy %q (want %s)", c.Policy, strings.Join(Policies, ", "))
		}
	}
	return c, nil
}

// param reads one parameter declaration. Its rules are compile's; compile
// runs in stages so that an error points at the field that causes it.
func (l *loader) param(n *yaml.Node, i int) (Param, error) {
	m, err := l.mapping(n, fmt.Sprintf("parameter %d", i+1))
	if err != nil {
		return Param{}, err
	}
	var prm Param
	name := m.get("name")
	if name == nil {
		return Param{}, l.errf(m.node, "%s: name is missing", m.what)
	}
	if prm.Name, err = l.str(m.what, name); err != nil {
		return Param{}, err
	}
	m.what = fmt.Sprintf("parameter %q", prm.Name)
	if err := m.only(l, "name", "type", "pattern", "values", "min", "max", "default", "required", "secret", "hint", "max_length"); err != nil {
		return Param{}, err
	}
	if first, dup := l.paramAt[prm.Name]; dup {
		return Param{}, l.errf(name.val, "%s is declared twice (first at line %d)", m.what, first)
	}
	l.paramAt[prm.Name] = name.val.Line
	typ := m.get("type")
	if typ == nil {
		return Param{}, l.errf(m.node, "%s: type is missing (string, enum, int, bool or list)", m.what)
	}
	if prm.Type, err = l.str(m.what, typ); err != nil {
		return Param{}, err
	}
	if v := m.get("values"); v != nil {
		if prm.Values, _, err = l.strs(m.what, v); err != nil {
			return Param{}, err
		}
	}
	if err := prm.compile(); err != nil {
		at := typ.val
		if !paramName.MatchString(prm.Name) {
			at = name.val
		}
		return Param{}, l.errf(at, "%v", err)
	}
	// Fields another type would ignore are mistakes: refuse them.
	for _, f := range []struct {
		key   string
		types []string
	}{{"values", []string{"enum"}}, {"pattern", []string{"string", "list"}}, {"min", []string{"int"}}, {"max", []string{"int"}},
		{"max_length", []string{"string", "list"}}} {
		if p := m.get(f.key); p != nil && !slices.Contains(f.types, prm.Type) {
			return Param{}, l.errf(p.key, "%s: %s does not apply to type %s", m.what, f.key, prm.Type)
		}
	}
	if pat := m.get("pattern"); pat != nil {
		if prm.Pattern, err = l.str(m.what, pat); err != nil {
			return Param{}, err
		}
		if err := prm.compile(); err != nil {
			return Param{}, l.errf(pat.val, "%v", err)
		}
	}
	for _, f := range []struct {
		key string
		dst **int64
	}{{"min", &prm.Min}, {"max", &prm.Max}} {
		if p := m.get(f.key); p != nil {
			v, err := l.integer(m.what, p)
			if err != nil {
				return Param{}, err
			}
			n := int64(v)
			*f.dst = &n
		}
	}
	if ml := m.get("max_length"); ml != nil {
		v, err := l.integer(m.what, ml)
		if err != nil {
			return Param{}, err
		}
		n := int64(v)
		prm.MaxLength = &n
		if err := prm.compile(); err != nil {
			return Param{}, l.errf(ml.val, "%v", err)
		}
	}
	if h := m.get("hint"); h != nil {
		if prm.Hint, err = l.str(m.what, h); err != nil {
			return Param{}, err
		}
	}
	if prm.Min != nil && prm.Max != nil && *prm.Min > *prm.Max {
		return Param{}, l.errf(m.get("max").val, "%s: max %d is less than min %d", m.what, *prm.Max, *prm.Min)
	}
	if def := m.get("default"); def != nil {
		if prm.Default, err = l.value(def.val, m.what+": default", nil); err != nil {
			return Param{}, err
		}
		if err := prm.compile(); err != nil {
			return Param{}, l.errf(def.val, "%v", err)
		}
	}
	if r := m.get("required"); r != nil {
		if prm.Required, err = l.boolean(m.what, r); err != nil {
			return Param{}, err
		}
	}
	if s := m.get("secret"); s != nil {
		if prm.Secret, err = l.boolean(m.what, s); err != nil {
			return Param{}, err
		}
	}
	return prm, nil
}

// step reads one entry of steps: a single step, a parallel group or a
// for_each. Inside a group (nested) only single steps are allowed.
func (l *loader) step(n *yaml.Node, what string, nested bool) (Step, error) {
	m, err := l.mapping(n, what)
	if err != nil {
		return Step{}, err
	}
	var kinds []string
	for _, k := range []string{"action", "parallel", "for_each"} {
		if m.get(k) != nil {
			kinds = append(kinds, k)
		}
	}
	if name := m.get("name"); name != nil {
		s, err := l.str(what, name)
		if err != nil {
			return Step{}, err
		}
		m.what = fmt.Sprintf("step %q", s)
	}
	switch {
	case len(kinds) == 0:
		// A typo (actoin) is likelier than a step with no kind: name it.
		if err := m.only(l, "name", "action", "with", "compensate", "timeout", "retries", "compensate_on_failure", "approval",
			"parallel", "for_each", "concurrency", "join", "step"); err != nil {
			return Step{}, err
		}
		return Step{}, l.errf(m.node, "%s: needs one of action, parallel or for_each", m.what)
	case len(kinds) > 1:
		return Step{}, l.errf(m.get(kinds[1]).key, "%s: has both %s and %s; a step has exactly one of action, parallel or for_each", m.what, kinds[0], kinds[1])
	case nested && kinds[0] != "action":
		return Step{}, l.errf(m.get(kinds[0]).key, "%s: %s cannot be nested in a group", m.what, kinds[0])
	}
	if kinds[0] != "action" {
		if name := m.get("name"); name != nil {
			return Step{}, l.errf(name.key, "%s: a %s group has no name of its own; name its steps", m.what, kinds[0])
		}
	}
	switch kinds[0] {
	case "parallel":
		return l.parallel(m)
	case "for_each":
		return l.forEach(m)
	}
	return l.action(m)
}

func (l *loader) action(m *mapping) (Step, error) {
	err := m.only(l, "name", "action", "with", "compensate", "timeout", "retries", "compensate_on_failure", "approval")
	if err != nil {
		return Step{}, err
	}
	name := m.get("name")
	if name == nil {
		return Step{}, l.errf(m.node, "%s: name is missing", m.what)
	}
	st := Step{Timeout: StepTimeoutDefault}
	if st.Name, err = l.str(m.what, name); err != nil {
		return Step{}, err
	}
	switch first, dup := l.stepAt[st.Name]; {
	case strings.TrimSpace(st.Name) == "":
		return Step{}, l.errf(name.val, "%s: name is empty", m.what)
	case strings.ContainsAny(st.Name, "[]"):
		// Plan names for_each branches step[item].
		return Step{}, l.errf(name.val, "%s: a step name cannot contain [ or ]", m.what)
	case dup:
		return Step{}, l.errf(name.val, "step name %q is used twice (first at line %d)", st.Name, first)
	}
	l.stepAt[st.Name] = name.val.Line
	if st.Action, err = l.actionName(m); err != nil {
		return Step{}, err
	}
	l.place(st.Name, m)
	if w := m.get("with"); w != nil {
		if st.With, err = l.with(m.what, w); err != nil {
			return Step{}, err
		}
	}
	if t := m.get("timeout"); t != nil {
		if st.Timeout, err = l.duration(m.what, t); err != nil {
			return Step{}, err
		}
	}
	if r := m.get("retries"); r != nil {
		if st.Retries, err = l.retries(m.what, r); err != nil {
			return Step{}, err
		}
	}
	if c := m.get("compensate_on_failure"); c != nil {
		if st.CompensateOnFailure, err = l.boolean(m.what, c); err != nil {
			return Step{}, err
		}
	}
	if c := m.get("compensate"); c != nil {
		if st.Compensate, err = l.compensation(m.what, c); err != nil {
			return Step{}, err
		}
		if cm, err := l.mapping(c.val, m.what+": compensate"); err == nil {
			l.place(st.Name+"/compensate", cm)
		}
	}
	if a := m.get("approval"); a != nil {
		if st.Approval, err = l.approval(m.what, a); err != nil {
			return Step{}, err
		}
	}
	return st, nil
}

// place notes the lines of a step's action and of each of its with fields
// under key (the step's name, + "/compensate" for its undo).
func (l *loader) place(key string, m *mapping) {
	if a := m.get("action"); a != nil {
		l.lines[key] = a.val.Line
	}
	if w := m.get("with"); w != nil {
		l.lines[key+"/with"] = w.key.Line
		if wn := resolve(w.val); wn.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(wn.Content); i += 2 {
				l.lines[key+"/with."+wn.Content[i].Value] = wn.Content[i].Line
			}
		}
	}
}

func (l *loader) actionName(m *mapping) (string, error) {
	a := m.get("action")
	if a == nil {
		return "", l.errf(m.node, "%s: action is missing", m.what)
	}
	s, err := l.str(m.what, a)
	if err == nil && s == "" {
		err = l.errf(a.val, "%s: action is empty", m.what)
	}
	return s, err
}

func (l *loader) compensation(what string, p *pair) (*Compensation, error) {
	m, err := l.mapping(p.val, what+": compensate")
	if err != nil {
		return nil, err
	}
	if err := m.only(l, "action", "with", "retries", "timeout"); err != nil {
		return nil, err
	}
	c := &Compensation{Retries: CompensationRetriesDefault, Timeout: StepTimeoutDefault}
	if c.Action, err = l.actionName(m); err != nil {
		return nil, err
	}
	if w := m.get("with"); w != nil {
		if c.With, err = l.with(m.what, w); err != nil {
			return nil, err
		}
	}
	if r := m.get("retries"); r != nil {
		if c.Retries, err = l.retries(m.what, r); err != nil {
			return nil, err
		}
	}
	if t := m.get("timeout"); t != nil {
		if c.Timeout, err = l.duration(m.what, t); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (l *loader) approval(what string, p *pair) (*Approval, error) {
	m, err := l.mapping(p.val, what+": approval")
	if err != nil {
		return nil, err
	}
	if err := m.only(l, "when", "roles", "timeout"); err != nil {
		return nil, err
	}
	a := &Approval{Roles: task.DefaultDeciders(), Timeout: ApprovalTimeoutDefault}
	if w := m.get("when"); w != nil {
		if a.When, err = l.str(m.what, w); err != nil {
			return nil, err
		}
		if err := l.template(a.When, w.val, m.what+": when"); err != nil {
			return nil, err
		}
	}
	if r := m.get("roles"); r != nil {
		rs, nodes, err := l.strs(m.what, r)
		if err != nil {
			return nil, err
		}
		if len(rs) == 0 {
			return nil, l.errf(r.val, "%s: roles is empty: nobody could approve", m.what)
		}
		for i, role := range rs {
			if _, err := task.ParseRole(role); err != nil {
				return nil, l.errf(nodes[i], "%s: %v", m.what, err)
			}
		}
		a.Roles = rs
	}
	if t := m.get("timeout"); t != nil {
		if a.Timeout, err = l.duration(m.what, t); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (l *loader) parallel(m *mapping) (Step, error) {
	if err := m.only(l, "parallel"); err != nil {
		return Step{}, err
	}
	g, err := l.mapping(m.get("parallel").val, m.what+": parallel")
	if err != nil {
		return Step{}, err
	}
	if err := g.only(l, "join", "timeout", "steps"); err != nil {
		return Step{}, err
	}
	steps := g.get("steps")
	if steps == nil {
		return Step{}, l.errf(g.node, "%s: steps are missing", g.what)
	}
	items, err := l.seq(g.what, steps)
	if err != nil {
		return Step{}, err
	}
	if len(items) == 0 {
		return Step{}, l.errf(steps.key, "%s: a group needs at least one step", g.what)
	}
	grp := &Group{Join: "all"}
	if j := g.get("join"); j != nil {
		if grp.Join, grp.Quorum, err = l.join(g.what, j, len(items), "the group's steps"); err != nil {
			return Step{}, err
		}
	}
	if t := g.get("timeout"); t != nil {
		if grp.Timeout, err = l.duration(g.what, t); err != nil {
			return Step{}, err
		}
	}
	for i, n := range items {
		st, err := l.step(n, fmt.Sprintf("%s step %d", g.what, i+1), true)
		if err != nil {
			return Step{}, err
		}
		grp.Steps = append(grp.Steps, st)
	}
	return Step{Parallel: grp}, nil
}

func (l *loader) forEach(m *mapping) (Step, error) {
	if err := m.only(l, "for_each", "concurrency", "join", "timeout", "step"); err != nil {
		return Step{}, err
	}
	items := m.get("for_each")
	fe := &ForEach{Join: "all"}
	var err error
	if fe.Items, err = l.str(m.what, items); err != nil {
		return Step{}, err
	}
	what := m.what + ": for_each"
	ref := itemsRef.FindStringSubmatch(fe.Items)
	if ref == nil {
		return Step{}, l.errf(items.val, `%s: must be exactly "{{ .params.NAME }}" naming a list parameter, not %q`, what, fe.Items)
	}
	switch prm := l.params[ref[1]]; {
	case prm == nil:
		return Step{}, l.errf(items.val, "%s: unknown parameter %q", what, ref[1])
	case prm.Type != "list":
		return Step{}, l.errf(items.val, "%s: parameter %q is of type %s, not list", what, ref[1], prm.Type)
	}
	if c := m.get("concurrency"); c != nil {
		if fe.Concurrency, err = l.integer(what, c); err != nil {
			return Step{}, err
		}
		if fe.Concurrency < 0 {
			return Step{}, l.errf(c.val, "%s: concurrency %d is negative (0 runs every branch at once)", what, fe.Concurrency)
		}
	}
	if j := m.get("join"); j != nil {
		if fe.Join, fe.Quorum, err = l.join(what, j, maxListItems, "the most items of a list parameter"); err != nil {
			return Step{}, err
		}
	}
	if t := m.get("timeout"); t != nil {
		if fe.Timeout, err = l.duration(what, t); err != nil {
			return Step{}, err
		}
	}
	s := m.get("step")
	if s == nil {
		return Step{}, l.errf(m.node, "%s: step is missing", what)
	}
	l.inEach = true
	fe.Step, err = l.step(s.val, what+" step", true)
	l.inEach = false
	if err != nil {
		return Step{}, err
	}
	return Step{ForEach: fe}, nil
}

// join reads all | any | quorum:N with 1 ≤ N ≤ size.
func (l *loader) join(what string, p *pair, size int, sizeIs string) (string, int, error) {
	s, err := l.str(what, p)
	if err != nil {
		return "", 0, err
	}
	switch {
	case s == "all" || s == "any":
		return s, 0, nil
	case strings.HasPrefix(s, "quorum:"):
		q, err := strconv.Atoi(strings.TrimPrefix(s, "quorum:"))
		if err != nil || q < 1 || q > size {
			return "", 0, l.errf(p.val, "%s: join %q: N must be between 1 and %d (%s)", what, s, size, sizeIs)
		}
		return "quorum", q, nil
	}
	return "", 0, l.errf(p.val, "%s: join %q: want all, any or quorum:N", what, s)
}

func (l *loader) duration(what string, p *pair) (time.Duration, error) {
	s, err := l.str(what, p)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, l.errf(p.val, "%s: %s %q is not a positive duration like 30s or 5m", what, p.key.Value, s)
	}
	return d, nil
}

func (l *loader) retries(what string, p *pair) (int, error) {
	n, err := l.integer(what, p)
	if err == nil && (n < 0 || n > maxRetries) {
		err = l.errf(p.val, "%s: retries %d must be between 0 and %d", what, n, maxRetries)
	}
	return n, err
}

// with reads a step's inputs: a mapping whose strings are templates.
func (l *loader) with(what string, p *pair) (map[string]any, error) {
	if resolve(p.val).Kind != yaml.MappingNode {
		return nil, l.errf(p.val, "%s: with must be a mapping, not %s", what, kindName(p.val))
	}
	v, err := l.value(p.val, what+": with", l.template)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// template checks s the way the saga renders it (text/template, no extra
// functions) and that it reads only data the saga provides: .params of
// this pipeline, .task.id, .task.team and, in a for_each, .item. A typo
// found here would otherwise fail mid-deploy, after earlier steps ran.
func (l *loader) template(s string, n *yaml.Node, what string) error {
	if !strings.Contains(s, "{{") {
		return nil // the saga does not render it either
	}
	t, err := template.New("with").Parse(s)
	if err != nil {
		return l.errf(n, "%s: invalid template: %v", what, err)
	}
	if err := l.refs(t.Tree.Root, true); err != nil {
		return l.errf(n, "%s: template %q: %v", what, s, err)
	}
	return nil
}

// refs walks a parsed template. dotIsRoot is false inside range and with,
// where . is something else and is not checked.
func (l *loader) refs(n parse.Node, dotIsRoot bool) error {
	switch x := n.(type) {
	case *parse.ListNode:
		if x == nil {
			return nil
		}
		for _, c := range x.Nodes {
			if err := l.refs(c, dotIsRoot); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return l.refs(x.Pipe, dotIsRoot)
	case *parse.PipeNode:
		if x == nil {
			return nil
		}
		for _, c := range x.Cmds {
			if err := l.refs(c, dotIsRoot); err != nil {
				return err
			}
		}
	case *parse.CommandNode:
		for _, a := range x.Args {
			if err := l.refs(a, dotIsRoot); err != nil {
				return err
			}
		}
	case *parse.ChainNode:
		return l.refs(x.Node, dotIsRoot)
	case *parse.FieldNode:
		if dotIsRoot {
			return l.field(x.Ident)
		}
	case *parse.VariableNode:
		if x.Ident[0] == "$" && len(x.Ident) > 1 {
			return l.field(x.Ident[1:])
		}
	case *parse.IfNode:
		return l.branch(&x.BranchNode, dotIsRoot, dotIsRoot)
	case *parse.RangeNode:
		return l.branch(&x.BranchNode, dotIsRoot, false)
	case *parse.WithNode:
		return l.branch(&x.BranchNode, dotIsRoot, false)
	case *parse.TemplateNode:
		return fmt.Errorf("{{ template %q }}: a step's templates cannot call others", x.Name)
	}
	return nil
}

func (l *loader) branch(b *parse.BranchNode, dotIsRoot, inBody bool) error {
	if err := l.refs(b.Pipe, dotIsRoot); err != nil {
		return err
	}
	if err := l.refs(b.List, inBody); err != nil {
		return err
	}
	return l.refs(b.ElseList, dotIsRoot)
}

// field checks a path read from the root of the template data.
func (l *loader) field(path []string) error {
	switch path[0] {
	case "params":
		if len(path) > 1 && l.params[path[1]] == nil {
			return fmt.Errorf("unknown parameter .params.%s", path[1])
		}
	case "task":
		if l.paramsOnly {
			return errors.New(".task is not known yet when the key is made (use .params)")
		}
		if len(path) > 1 && path[1] != "id" && path[1] != "team" {
			return fmt.Errorf("unknown field .task.%s (want .task.id or .task.team)", path[1])
		}
	case "item":
		if l.paramsOnly || !l.inEach {
			return errors.New(".item is only set in the step of a for_each")
		}
	default:
		return fmt.Errorf("unknown field .%s (want .params, .task or .item)", path[0])
	}
	return nil
}

// links reads the links block: version and compare URL templates, each
// checked by Links.compile at the line of its value.
func (l *loader) links(lk *pair, p *Pipeline) (*Links, error) {
	m, err := l.mapping(lk.val, "links")
	if err != nil {
		return nil, err
	}
	if err := m.only(l, "version", "compare"); err != nil {
		return nil, err
	}
	out := &Links{}
	for _, f := range []struct {
		key string
		dst *string
	}{{"version", &out.Version}, {"compare", &out.Compare}} {
		v := m.get(f.key)
		if v == nil {
			continue
		}
		if *f.dst, err = l.str("links", v); err != nil {
			return nil, err
		}
		one := &Links{}
		if f.key == "version" {
			one.Version = *f.dst
		} else {
			one.Compare = *f.dst
		}
		if err := one.compile(p); err != nil {
			return nil, l.errf(v.val, "pipeline: %v", err)
		}
	}
	if err := out.compile(p); err != nil {
		return nil, l.errf(lk.val, "pipeline: %v", err)
	}
	return out, nil
}
