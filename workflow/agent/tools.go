package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// Param is one argument of a tool. The schema is deliberately small
// (strings, integers, booleans, string lists, objects of scalars), so every
// argument can be checked here before anything runs.
type Param struct {
	Name        string
	Type        string // string, integer, boolean, string_list, object
	Description string
	Required    bool
	Enum        []string
	Min, Max    int // integers: bounds (both 0: none); strings: Max is the length limit
}

// Tool is something the model may call.
type Tool struct {
	Name        string
	Description string
	Params      []Param
	// Mutating tools change something: they run only after a person
	// confirms the exact call.
	Mutating bool
	// Prepare (mutating tools) checks the arguments against the world and
	// resolves the exact action (the pipeline and parameters a rollback
	// will deploy); its result is what a person confirms and what runs.
	Prepare func(ctx context.Context, env *Env, args map[string]any) (json.RawMessage, error)
	// Run does the work. Mutating tools get Prepare's plan as args["plan"].
	Run func(ctx context.Context, env *Env, args map[string]any) (string, error)
	// Mask (tools whose arguments may carry secrets) replaces secret values
	// in v, a call's decoded arguments or its plan, with [REDACTED] in
	// place and returns the string values it replaced (registered for
	// redaction) and whether it changed anything. What people and the
	// model see of a call is masked; the task's own state keeps the real
	// call, so an approved one runs with the real values.
	Mask func(env *Env, v map[string]any) (secrets []string, masked bool)
}

// Env is what tools see: the agent task and the services to act with.
// Everything is scoped to the agent task's team; deploys it starts are
// created by the agent task's creator.
type Env struct {
	Store      *store.Store
	Catalog    *pipeline.Catalog
	Task       *task.Task
	CallKey    string // unique per tool call: idempotency key of what it creates
	MaxPending int
	// AddSecret registers a value to redact from everything the model sees.
	AddSecret func(string)
}

func (e *Env) teams() []string { return []string{e.Task.TeamID} }

// schema renders the JSON schema the model is given.
func (t *Tool) schema() json.RawMessage {
	props := map[string]any{}
	var required []string
	for _, p := range t.Params {
		s := map[string]any{"description": p.Description}
		switch p.Type {
		case "string_list":
			s["type"], s["items"] = "array", map[string]any{"type": "string"}
		case "object":
			s["type"] = "object"
		default:
			s["type"] = p.Type
		}
		if len(p.Enum) > 0 {
			s["enum"] = p.Enum
		}
		if p.Type == "integer" && (p.Min != 0 || p.Max != 0) {
			s["minimum"], s["maximum"] = p.Min, p.Max
		}
		if p.Type == "string" && p.Max > 0 {
			s["maxLength"] = p.Max
		}
		props[p.Name] = s
		if p.Required {
			required = append(required, p.Name)
		}
	}
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
	}
	b, _ := json.Marshal(out)
	return b
}

// parseArgs decodes and validates a call's arguments against the tool's
// parameters: a JSON object, no unknown or missing fields, right types,
// enums and bounds. The error text goes back to the model.
func (t *Tool) parseArgs(raw string) (map[string]any, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = "{}"
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil {
		return nil, fmt.Errorf("arguments are not a JSON object: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("arguments have trailing data after the JSON object")
	}
	if args == nil {
		return nil, fmt.Errorf("arguments must be a JSON object")
	}
	known := map[string]Param{}
	for _, p := range t.Params {
		known[p.Name] = p
	}
	var unknown []string
	for k := range args {
		if _, ok := known[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unknown argument(s) %s; %s takes %s", strings.Join(unknown, ", "), t.Name, t.paramNames())
	}
	for _, p := range t.Params {
		v, ok := args[p.Name]
		if !ok || v == nil {
			if p.Required {
				return nil, fmt.Errorf("argument %s is required", p.Name)
			}
			delete(args, p.Name)
			continue
		}
		nv, err := checkParam(p, v)
		if err != nil {
			return nil, fmt.Errorf("argument %s: %v", p.Name, err)
		}
		args[p.Name] = nv
	}
	return args, nil
}

func (t *Tool) paramNames() string {
	if len(t.Params) == 0 {
		return "no arguments"
	}
	var n []string
	for _, p := range t.Params {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}

func checkParam(p Param, v any) (any, error) {
	switch p.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("must be a string")
		}
		if p.Max > 0 && len(s) > p.Max {
			return nil, fmt.Errorf("must be at most %d characters", p.Max)
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, s) {
			return nil, fmt.Errorf("must be one of %s", strings.Join(p.Enum, ", "))
		}
		return s, nil
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return nil, fmt.Errorf("must be an integer")
		}
		i, err := n.Int64()
		if err != nil {
			return nil, fmt.Errorf("must be an integer")
		}
		if (p.Min != 0 || p.Max != 0) && (i < int64(p.Min) || i > int64(p.Max)) {
			return nil, fmt.Errorf("must be between %d and %d", p.Min, p.Max)
		}
		return int(i), nil
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("must be true or false")
		}
		return b, nil
	case "string_list":
		l, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("must be a list of strings")
		}
		out := make([]string, 0, len(l))
		for _, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("must be a list of strings")
			}
			out = append(out, s)
		}
		if len(out) > 50 {
			return nil, fmt.Errorf("must have at most 50 entries")
		}
		return out, nil
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("must be an object")
		}
		// Numbers back to plain JSON values for validators downstream.
		b, _ := json.Marshal(m)
		var plain map[string]any
		d := json.NewDecoder(bytes.NewReader(b))
		if err := d.Decode(&plain); err != nil {
			return nil, fmt.Errorf("must be an object")
		}
		return plain, nil
	}
	return nil, fmt.Errorf("unsupported parameter type %s", p.Type)
}

// toolDefs lists the tools for the model, in a stable order.
func toolDefs(tools map[string]*Tool) []ToolDef {
	var out []ToolDef
	for _, t := range tools {
		desc := t.Description
		if t.Mutating {
			desc += " This changes things: a person must confirm the exact call before it runs."
		}
		out = append(out, ToolDef{Name: t.Name, Description: desc, Parameters: t.schema()})
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	return out
}
