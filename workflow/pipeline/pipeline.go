// Package pipeline defines deploy pipelines: their parameter schema, steps,
// and the catalog of pipelines a server offers. Parameters from users are
// validated here against the schema and only ever rendered into step inputs
// as values (never through a shell).
package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"flightdeck/internal/words"
	"flightdeck/workflow/environment"
)

// Param declares one parameter of a pipeline.
type Param struct {
	Name     string   `json:"name" yaml:"name"`
	Type     string   `json:"type" yaml:"type"` // string, enum, int, bool, list
	Pattern  string   `json:"pattern,omitempty" yaml:"pattern"`
	Values   []string `json:"values,omitempty" yaml:"values"`
	Min      *int64   `json:"min,omitempty" yaml:"min"`
	Max      *int64   `json:"max,omitempty" yaml:"max"`
	Default  any      `json:"default,omitempty" yaml:"default"`
	Required bool     `json:"required,omitempty" yaml:"required"`
	Secret   bool     `json:"secret,omitempty" yaml:"secret"`
	// Hint says in words what the value must look like ("lowercase
	// letters, digits and dashes, up to 31"): forms and errors show it
	// instead of the pattern.
	Hint string `json:"hint,omitempty" yaml:"hint"`
	// MaxLength bounds a string's (or each list item's) length in
	// characters; unset, an anchored finite pattern implies it (MaxLen).
	MaxLength *int64 `json:"max_length,omitempty" yaml:"max_length"`

	re         *regexp.Regexp
	patternMax int // the bound the pattern implies, 0 for none
}

// Pipeline is a named, parameterised list of steps.
type Pipeline struct {
	Name        string
	Description string
	Params      []Param
	Steps       []Step
	// Target names the params that say what the pipeline deploys to (nil:
	// every non-secret param but version; see TargetParams).
	Target []string
	// Concurrency, if set, allows one running task per key and team.
	Concurrency *Concurrency
	// Environment names the param whose value is a deploy's environment
	// ("": the param env, if the pipeline has one; see EnvironmentParam).
	Environment string
	// Dir is the working directory of exec steps ("" for the server's).
	Dir string
	// OnFailure is what a step that still fails after its retries does:
	// "" (compensate at once) or "ask" (guided failure: the task parks
	// paused until a person decides, at most DecisionTimeout, default
	// DecisionTimeoutDefault, then it rolls back). See AsksOnFailure.
	OnFailure       string
	DecisionTimeout time.Duration
	// Links, if set, link versions to their source (links: version and
	// compare); see VersionURL and CompareURL.
	Links *Links

	// file and lines place a loaded pipeline's steps for CheckActions
	// (both empty for pipelines built in Go).
	file  string
	lines map[string]int
}

// OnFailureAsk is the on_failure value of guided failure.
const OnFailureAsk = "ask"

// AsksOnFailure answers whether a deploy of p with these params asks a
// person when a step fails (contract §10) instead of compensating at once:
// the pipeline's on_failure. Catalog.AsksOnFailure adds the environment's
// rule; the saga asks that one.
func (p *Pipeline) AsksOnFailure(params map[string]any) bool {
	return p.OnFailure == OnFailureAsk
}

// DecisionTimeoutOr is how long a failed step's decision may take.
func (p *Pipeline) DecisionTimeoutOr() time.Duration {
	if p.DecisionTimeout > 0 {
		return p.DecisionTimeout
	}
	return DecisionTimeoutDefault
}

// Step is one entry of a pipeline: a single step (Action set), a parallel
// group (Parallel set) or a dynamic split (ForEach set).
type Step struct {
	Name                string
	Action              string
	With                map[string]any
	Compensate          *Compensation
	Timeout             time.Duration // default 5m
	Retries             int           // extra attempts on failure
	CompensateOnFailure bool
	Approval            *Approval

	Parallel *Group
	ForEach  *ForEach
}

// Group is a set of steps run at once.
type Group struct {
	Join    string        // all | any | quorum
	Quorum  int           // with Join quorum: how many must complete
	Timeout time.Duration // 0: none; else join with what finished
	Steps   []Step
}

// ForEach runs one branch of Step per item of a list parameter.
type ForEach struct {
	Items       string // a template naming a list parameter: "{{ .params.regions }}"
	Concurrency int    // at most this many branches at once; 0: all
	Join        string
	Quorum      int
	Timeout     time.Duration
	Step        Step
}

// Compensation undoes a completed step.
type Compensation struct {
	Action  string
	With    map[string]any
	Retries int           // default 3
	Timeout time.Duration // default 5m
}

// Approval makes a step wait for a person.
type Approval struct {
	When    string        // a template; "" means always
	Roles   []string      // default task.DefaultDeciders()
	Timeout time.Duration // default 1h
}

// Defaults of step settings.
const (
	StepTimeoutDefault         = 5 * time.Minute
	CompensationRetriesDefault = 3
	ApprovalTimeoutDefault     = time.Hour
	DecisionTimeoutDefault     = time.Hour // a failed step's decision (on_failure: ask)
)

// StepNames lists the leaf steps' names in file order (a for_each step once).
func (p *Pipeline) StepNames() []string {
	var out []string
	for _, s := range p.Steps {
		switch {
		case s.Parallel != nil:
			for _, g := range s.Parallel.Steps {
				out = append(out, g.Name)
			}
		case s.ForEach != nil:
			out = append(out, s.ForEach.Step.Name)
		default:
			out = append(out, s.Name)
		}
	}
	return out
}

// FieldError is a parameter that does not validate; Field is its dotted path
// in the submit body (params.app).
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

var paramName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// compile checks a parameter declaration and prepares its pattern.
func (p *Param) compile() error {
	if !paramName.MatchString(p.Name) {
		return fmt.Errorf("parameter name %q: use lowercase letters, digits and underscores", p.Name)
	}
	switch p.Type {
	case "string", "int", "bool", "list":
	case "enum":
		if len(p.Values) == 0 {
			return fmt.Errorf("parameter %s: an enum needs values", p.Name)
		}
	default:
		return fmt.Errorf("parameter %s: unknown type %q (want string, enum, int, bool or list)", p.Name, p.Type)
	}
	if p.Pattern != "" {
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			return fmt.Errorf("parameter %s: bad pattern: %w", p.Name, err)
		}
		p.re = re
		p.patternMax = patternMaxLen(p.Pattern)
	}
	if p.MaxLength != nil && (*p.MaxLength < 1 || *p.MaxLength > maxStringParam) {
		return fmt.Errorf("parameter %s: max_length must be between 1 and %d", p.Name, maxStringParam)
	}
	if p.Default != nil {
		if _, ferr := p.check(p.Default); ferr != "" {
			return fmt.Errorf("parameter %s: default %v: %s", p.Name, p.Default, ferr)
		}
	}
	return nil
}

// Validate checks params (a JSON object) against the schema and returns
// them with defaults applied, or the first error of ValidateAll.
func (p *Pipeline) Validate(raw json.RawMessage) (map[string]any, *FieldError) {
	out, errs := p.ValidateAll(raw)
	if len(errs) > 0 {
		return nil, &errs[0]
	}
	return out, nil
}

// ValidateAll checks params (a JSON object) against the schema and returns
// them with defaults applied, or every error: one per parameter, in the
// schema's order, then unknown parameters by name. Unknown parameters are
// refused: a typo must not silently deploy with a default.
func (p *Pipeline) ValidateAll(raw json.RawMessage) (map[string]any, []FieldError) {
	var in map[string]any
	// An empty object, the params of most tasks, needs no decoder (the
	// saga validates on every run).
	if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" && string(t) != "{}" {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.UseNumber()
		if err := dec.Decode(&in); err != nil || in == nil {
			return nil, []FieldError{{Field: "params", Message: "must be a JSON object"}}
		}
	}
	out := make(map[string]any, len(p.Params))
	var errs []FieldError
	for i := range p.Params {
		prm := &p.Params[i]
		v, ok := in[prm.Name]
		if !ok || v == nil {
			if prm.Default != nil {
				out[prm.Name] = normalizeDefault(prm.Default)
			} else if prm.Required {
				errs = append(errs, FieldError{Field: "params." + prm.Name, Message: "is required"})
			}
			continue
		}
		val, msg := prm.check(v)
		if msg != "" {
			errs = append(errs, FieldError{Field: "params." + prm.Name, Message: msg})
			continue
		}
		out[prm.Name] = val
	}
	var unknown []string
	for k := range in {
		if !slices.ContainsFunc(p.Params, func(prm Param) bool { return prm.Name == k }) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		errs = append(errs, FieldError{Field: "params." + k, Message: fmt.Sprintf("unknown parameter of pipeline %s", p.Name)})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// Redacted stands in for a secret value wherever one would be shown.
const Redacted = "[REDACTED]"

// Public returns params as people may see them: each secret parameter that
// is set has the value Redacted, so it shows that it was set but not what
// to. params is left as it is.
func (p *Pipeline) Public(params map[string]any) map[string]any {
	pub, _ := p.SplitSecrets(params)
	return pub
}

// SplitSecrets splits validated params into the public ones (secret values
// replaced by Redacted) and the secret ones' real values (nil when none is
// set). A task stores them apart, so only the worker running it ever reads
// the secrets; merging secret over public gives params back.
func (p *Pipeline) SplitSecrets(params map[string]any) (public, secret map[string]any) {
	public = make(map[string]any, len(params))
	for k, v := range params {
		public[k] = v
	}
	for _, prm := range p.Params {
		v, ok := params[prm.Name]
		if !prm.Secret || !ok {
			continue
		}
		if secret == nil {
			secret = map[string]any{}
		}
		secret[prm.Name] = v
		public[prm.Name] = Redacted
	}
	return public, secret
}

// CheckParam validates one value of the parameter name (a promotion's
// target value) and returns it normalised, or a message.
func (p *Pipeline) CheckParam(name string, v any) (any, string) {
	for i := range p.Params {
		if p.Params[i].Name == name {
			return p.Params[i].check(v)
		}
	}
	return nil, fmt.Sprintf("is not a parameter of pipeline %s", p.Name)
}

// maxStringParam bounds a string parameter's length.
const maxStringParam = 4096

// check validates one value and returns it normalised, or a message.
func (p *Param) check(v any) (any, string) {
	switch p.Type {
	case "string", "enum":
		s, ok := v.(string)
		if !ok {
			return nil, "must be a string"
		}
		if msg := p.checkLen(s); msg != "" {
			return nil, msg
		}
		if strings.ContainsRune(s, 0) {
			return nil, "must not contain NUL bytes"
		}
		if p.Type == "enum" {
			for _, allowed := range p.Values {
				if s == allowed {
					return s, ""
				}
			}
			return nil, "must be one of " + strings.Join(p.Values, ", ")
		}
		if p.re != nil && !p.re.MatchString(s) {
			return nil, p.patternMessage()
		}
		return s, ""
	case "int":
		var n int64
		switch x := v.(type) {
		case json.Number:
			i, err := x.Int64()
			if err != nil {
				return nil, "must be an integer"
			}
			n = i
		case int:
			n = int64(x)
		case int64:
			n = x
		case float64:
			if x != float64(int64(x)) {
				return nil, "must be an integer"
			}
			n = int64(x)
		default:
			return nil, "must be an integer"
		}
		if p.Min != nil && n < *p.Min {
			return nil, fmt.Sprintf("must be at least %d", *p.Min)
		}
		if p.Max != nil && n > *p.Max {
			return nil, fmt.Sprintf("must be at most %d", *p.Max)
		}
		return n, ""
	case "bool":
		b, ok := v.(bool)
		if !ok {
			return nil, "must be true or false"
		}
		return b, ""
	case "list":
		items, ok := v.([]any)
		if !ok {
			return nil, "must be a list of strings"
		}
		if len(items) > 100 {
			return nil, "must have at most 100 items"
		}
		out := make([]string, len(items))
		for i, it := range items {
			s, ok := it.(string)
			if !ok {
				return nil, "must be a list of strings"
			}
			if msg := p.checkLen(s); msg != "" {
				return nil, fmt.Sprintf("item %d %s", i+1, msg)
			}
			if p.re != nil && !p.re.MatchString(s) {
				return nil, fmt.Sprintf("item %d %s", i+1, p.patternMessage())
			}
			out[i] = s
		}
		return out, ""
	}
	return nil, "has an unknown type"
}

// checkLen bounds a string by MaxLen (in characters, as people count
// them) and by the global limit (in bytes, which is what it protects).
func (p *Param) checkLen(s string) string {
	if n := p.MaxLen(); n > 0 && utf8.RuneCountInString(s) > n {
		return fmt.Sprintf("must be at most %d characters (this one has %d)", n, utf8.RuneCountInString(s))
	}
	if len(s) > maxStringParam {
		return fmt.Sprintf("must be at most %d bytes", maxStringParam)
	}
	return ""
}

// patternMessage says what a value that misses the pattern should be.
func (p *Param) patternMessage() string {
	if p.Hint != "" {
		return "must be " + p.Hint
	}
	// Say what a valid value looks like, never the regular expression.
	if ex := words.Example(p.Pattern); ex != "" {
		return "must look like " + ex
	}
	return "is not in the form this parameter accepts"
}

func normalizeDefault(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case []any:
		out := make([]string, len(x))
		for i, it := range x {
			out[i] = fmt.Sprint(it)
		}
		return out
	}
	return v
}

// Catalog is the set of pipelines a server offers, by name, with the
// environments' rules their deploys obey.
type Catalog struct {
	byName map[string]*Pipeline
	names  []string
	envs   *environment.Rules
}

// SetEnvironments sets the environments' rules (environments.yaml).
func (c *Catalog) SetEnvironments(r *environment.Rules) { c.envs = r }

// AsksOnFailure is the one answer to "does this deploy ask on failure"
// (contract §10): the pipeline's on_failure, or the on_failure rule of the
// environment the deploy goes to (environments.yaml, §9).
func (c *Catalog) AsksOnFailure(p *Pipeline, params map[string]any) bool {
	if p.AsksOnFailure(params) {
		return true
	}
	e := c.Environments().Get(p.EnvironmentOf(params))
	return e != nil && e.OnFailure == OnFailureAsk
}

// Environments are the environments' rules; never nil.
func (c *Catalog) Environments() *environment.Rules {
	if c == nil || c.envs == nil {
		return environment.NewRules()
	}
	return c.envs
}

// NewCatalog validates and indexes pipelines; later ones replace earlier
// ones of the same name (files override built-ins).
func NewCatalog(ps ...*Pipeline) (*Catalog, error) {
	c := &Catalog{byName: map[string]*Pipeline{}}
	for _, p := range ps {
		for i := range p.Params {
			if err := p.Params[i].compile(); err != nil {
				return nil, fmt.Errorf("pipeline %s: %w", p.Name, err)
			}
		}
		if _, seen := c.byName[p.Name]; !seen {
			c.names = append(c.names, p.Name)
		}
		c.byName[p.Name] = p
	}
	sort.Strings(c.names)
	return c, nil
}

// Get returns a pipeline by name.
func (c *Catalog) Get(name string) (*Pipeline, bool) {
	p, ok := c.byName[name]
	return p, ok
}

// All returns the pipelines sorted by name.
func (c *Catalog) All() []*Pipeline {
	out := make([]*Pipeline, len(c.names))
	for i, n := range c.names {
		out[i] = c.byName[n]
	}
	return out
}
