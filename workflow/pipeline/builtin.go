package pipeline

import (
	"time"

	"flightdeck/workflow/task"
)

// Hints of the built-in pipelines' patterns, in words.
const (
	hintApp     = "lowercase letters, digits and dashes, starting with a letter, up to 31 characters"
	hintVersion = "letters, digits, dots, plus and minus signs, up to 40 characters (1.2.3, 2024.06.1-rc1)"
)

// Builtin returns the pipelines every server offers: these and the
// examples (examples/*.yaml).
func Builtin() []*Pipeline {
	one := int64(1)
	five := int64(5)
	return append([]*Pipeline{
		{
			Name:        "noop",
			Description: "One step that does nothing (benchmarks and smoke tests)",
			Steps:       []Step{{Name: "noop", Action: "noop"}},
		},
		{
			Name:        "approval-demo",
			Description: "Two harmless steps; the second waits for an approver (try cancel and reject too)",
			Steps: []Step{
				{Name: "prepare", Action: "noop", Compensate: &Compensation{Action: "noop", Retries: CompensationRetriesDefault}},
				{Name: "release", Action: "noop", Compensate: &Compensation{Action: "noop", Retries: CompensationRetriesDefault},
					Approval: &Approval{Roles: task.DefaultDeciders(), Timeout: time.Hour}},
			},
		},
		{
			Name:        "web-service",
			Description: "Deploy a web service with DNS, TLS, an instance and monitoring",
			Params: []Param{
				{Name: "app", Type: "string", Pattern: `^[a-z][a-z0-9-]{0,30}$`, Required: true, Hint: hintApp},
				{Name: "version", Type: "string", Pattern: `^[0-9A-Za-z.+-]{1,40}$`, Required: true, Hint: hintVersion},
				{Name: "env", Type: "enum", Values: []string{"staging", "production"}, Default: "staging"},
				{Name: "replicas", Type: "int", Min: &one, Max: &five, Default: 1},
			},
			// One deploy at a time per app and environment; later ones wait.
			Target:      []string{"app", "env"},
			Concurrency: &Concurrency{Policy: PolicyQueue},
			Steps: []Step{
				{Name: "create_dns", Action: "local.dns_create", With: map[string]any{"host": "{{ .params.app }}.{{ .params.env }}"},
					Compensate: &Compensation{Action: "local.dns_delete", Retries: CompensationRetriesDefault}, Timeout: 30 * time.Second, Retries: 3},
				{Name: "issue_cert", Action: "local.cert_issue", With: map[string]any{"host": "{{ .params.app }}.{{ .params.env }}.localhost"},
					Compensate: &Compensation{Action: "local.cert_revoke", Retries: CompensationRetriesDefault}},
				{Name: "deploy_container", Action: "local.instance_start", With: map[string]any{"version": "{{ .params.version }}"},
					Compensate: &Compensation{Action: "local.instance_stop", Retries: CompensationRetriesDefault},
					Approval:   &Approval{When: `{{ eq .params.env "production" }}`, Roles: task.DefaultDeciders(), Timeout: 30 * time.Minute}},
				{Name: "configure_monitoring", Action: "local.monitor_create", Compensate: &Compensation{Action: "local.monitor_delete", Retries: CompensationRetriesDefault}},
			},
		},
	}, examples()...)
}
