package pipeline

import (
	"strconv"
	"strings"
	"text/template/parse"

	"flightdeck/workflow/task"
)

// ApprovalRule says that a step waits for a person, who, and when.
type ApprovalRule struct {
	Step  string
	Roles []string // who may decide (never the task's creator)
	// When is the condition in words ("env is production"), "" for
	// always; Expr is the template as written when no words fit.
	When, Expr string
}

// ApprovalRolesDefault decide a step's approval that names no roles.
var ApprovalRolesDefault = task.DefaultDeciders()

// ApprovalRules lists the pipeline's steps that need an approval, in file
// order (a for_each step once).
func (p *Pipeline) ApprovalRules() []ApprovalRule {
	var out []ApprovalRule
	add := func(s Step) {
		if s.Approval == nil {
			return
		}
		r := ApprovalRule{Step: s.Name, Roles: s.Approval.Roles}
		if len(r.Roles) == 0 {
			r.Roles = ApprovalRolesDefault
		}
		if s.Approval.When != "" {
			r.When = whenInWords(s.Approval.When)
			if r.When == "" {
				r.Expr = s.Approval.When
			}
		}
		out = append(out, r)
	}
	for _, s := range p.Steps {
		switch {
		case s.Parallel != nil:
			for _, g := range s.Parallel.Steps {
				add(g)
			}
		case s.ForEach != nil:
			add(s.ForEach.Step)
		default:
			add(s)
		}
	}
	return out
}

// whenInWords reads the simple conditions people write ({{ eq .params.env
// "production" }}, ne, a bool param, and/or of those) as words; "" for
// anything else.
func whenInWords(when string) string {
	trees, err := parse.Parse("when", when, "{{", "}}", map[string]any{"eq": true, "ne": true, "and": true, "or": true, "not": true})
	if err != nil {
		return ""
	}
	root := trees["when"].Root
	var action *parse.ActionNode
	for _, n := range root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			if strings.TrimSpace(string(n.Text)) != "" {
				return ""
			}
		case *parse.ActionNode:
			if action != nil {
				return ""
			}
			action = n
		default:
			return ""
		}
	}
	if action == nil || len(action.Pipe.Decl) > 0 || len(action.Pipe.Cmds) != 1 {
		return ""
	}
	return cmdWords(action.Pipe.Cmds[0])
}

func cmdWords(c *parse.CommandNode) string {
	if len(c.Args) == 1 {
		return condWords(c.Args[0])
	}
	fn, ok := c.Args[0].(*parse.IdentifierNode)
	if !ok {
		return ""
	}
	args := make([]string, len(c.Args)-1)
	for i, a := range c.Args[1:] {
		if args[i] = argWords(a); args[i] == "" {
			return ""
		}
	}
	switch {
	case (fn.Ident == "eq" || fn.Ident == "ne") && len(args) == 2 && isParam(c.Args[1]):
		verb := " is "
		if fn.Ident == "ne" {
			verb = " is not "
		}
		return args[0] + verb + args[1]
	case fn.Ident == "not" && len(args) == 1 && isParam(c.Args[1]):
		return args[0] + " is off"
	case fn.Ident == "and" || fn.Ident == "or":
		for i, a := range c.Args[1:] {
			if args[i] = condWords(a); args[i] == "" {
				return ""
			}
		}
		return strings.Join(args, " "+fn.Ident+" ")
	}
	return ""
}

// condWords reads n as a condition: a bool param is "name is on".
func condWords(n parse.Node) string {
	if isParam(n) {
		return argWords(n) + " is on"
	}
	if _, ok := n.(*parse.PipeNode); ok {
		return argWords(n)
	}
	return ""
}

func isParam(n parse.Node) bool {
	f, ok := n.(*parse.FieldNode)
	return ok && len(f.Ident) == 2 && f.Ident[0] == "params"
}

func argWords(n parse.Node) string {
	switch n := n.(type) {
	case *parse.FieldNode:
		if isParam(n) {
			return n.Ident[1]
		}
	case *parse.StringNode:
		return n.Text
	case *parse.NumberNode:
		return n.Text
	case *parse.BoolNode:
		return strconv.FormatBool(n.True)
	case *parse.PipeNode:
		if len(n.Decl) == 0 && len(n.Cmds) == 1 {
			return cmdWords(n.Cmds[0])
		}
	}
	return ""
}
