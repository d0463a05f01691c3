package handlers

import (
	"fmt"
	"slices"
	"strings"

	"flightdeck/internal/words"
	"flightdeck/workflow/environment"
	"flightdeck/workflow/pipeline"
)

// ruleNotes say in words the rules of the environments a pipeline's
// deploys may go to (the submit form).
func ruleNotes(p *pipeline.Pipeline, rules *environment.Rules) []string {
	param := p.EnvironmentParam()
	if param == "" {
		return nil
	}
	var values []string
	for _, prm := range p.Params {
		if prm.Name == param && prm.Type == "enum" {
			values = prm.Values
		}
	}
	var out []string
	for _, e := range rules.All() {
		if values != nil && !slices.Contains(values, e.Name) {
			continue
		}
		var parts []string
		if r := e.Reviewers; r != nil {
			parts = append(parts, fmt.Sprintf("%s (%s) approve first", words.Count(int64(r.Count), "reviewer"), joinWords(r.Roles)))
		}
		if e.Wait > 0 {
			parts = append(parts, "then a wait of "+words.Duration(e.Wait))
		}
		if e.Versions != nil {
			// An example, not the pattern: people read this.
			if ex := words.Example(e.Versions.String()); ex != "" {
				parts = append(parts, "versions like "+ex)
			} else {
				parts = append(parts, "only some versions")
			}
		}
		if q := e.Requires; q != nil {
			parts = append(parts, fmt.Sprintf("the version completes in %s at least %s before", q.Env, words.Duration(q.Soak)))
		}
		for _, w := range e.Freeze {
			note := "frozen " + w.Text
			if !strings.HasPrefix(w.Reason, "freeze window") {
				note += " (" + w.Reason + ")"
			}
			parts = append(parts, note)
		}
		if len(parts) > 0 {
			out = append(out, e.Name+": "+strings.Join(parts, "; "))
		}
	}
	return out
}

func joinWords(ws []string) string {
	if len(ws) <= 1 {
		return strings.Join(ws, "")
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " or " + ws[len(ws)-1]
}
