package pipeline

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const good = `name: example-service
description: Deploy with DNS and a smoke test
params:
  - {name: app, type: string, pattern: "^[a-z][a-z0-9-]{0,30}$", required: true}
  - {name: env, type: enum, values: [staging, production], default: staging}
  - {name: replicas, type: int, min: 1, max: 5, default: 1}
  - {name: regions, type: list}
  - {name: db_password, type: string, secret: true}
steps:
  - name: create_dns
    action: local.dns_create
    with: {host: "{{ .params.app }}.{{ .params.env }}"}
    compensate: {action: local.dns_delete}
    timeout: 30s
    retries: 3
  - name: smoke
    action: exec
    with:
      command: ["./scripts/smoke.sh", "{{ .params.app }}"]
      env: {TARGET: "{{ .params.env }}"}
    compensate:
      action: exec
      with: {command: ["./scripts/undo.sh"]}
      retries: 2
      timeout: 1m
    approval:
      when: '{{ eq .params.env "production" }}'
      roles: [approver]
      timeout: 30m
  - parallel:
      join: quorum:2
      timeout: 10m
      steps:
        - {name: a, action: noop}
        - {name: b, action: noop}
        - {name: c, action: noop}
  - for_each: "{{ .params.regions }}"
    concurrency: 3
    join: all
    step: {name: deploy_region, action: exec, with: {command: ["echo", "{{ .item }}"]}}
`

func TestParseGood(t *testing.T) {
	t.Parallel()
	p, err := Parse("x.yaml", []byte(good))
	require.NoError(t, err)
	require.Equal(t, "example-service", p.Name)
	require.Len(t, p.Params, 5)
	require.Equal(t, 30*time.Second, p.Steps[0].Timeout)
	require.Equal(t, 3, p.Steps[0].Retries)
	require.Equal(t, CompensationRetriesDefault, p.Steps[0].Compensate.Retries)
	require.Equal(t, []any{"./scripts/smoke.sh", "{{ .params.app }}"}, p.Steps[1].With["command"])
	require.Equal(t, 30*time.Minute, p.Steps[1].Approval.Timeout)
	require.Equal(t, "quorum", p.Steps[2].Parallel.Join)
	require.Equal(t, 2, p.Steps[2].Parallel.Quorum)
	require.Equal(t, 3, p.Steps[3].ForEach.Concurrency)
	require.Equal(t, []string{"create_dns", "smoke", "a", "b", "c", "deploy_region"}, p.StepNames())

	params, ferr := p.Validate([]byte(`{"app":"shop","regions":["eu","us"]}`))
	require.Nil(t, ferr)
	stages, total, err := p.Plan(params)
	require.NoError(t, err)
	require.Equal(t, 7, total)
	require.Equal(t, "deploy_region[us]", stages[3].Steps[1].Name)
}

func TestParseErrorsNameFileAndLine(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, doc, want string }{
		{"UnknownField", "name: x\nsteps:\n  - name: a\n    actoin: noop\n", `x.yaml:4: unknown field "actoin"`},
		{"BadName", "name: Bad Name\nsteps:\n  - {name: a, action: noop}\n", `x.yaml:1: name "Bad Name"`},
		{"DuplicateStep", "name: x\nsteps:\n  - {name: a, action: noop}\n  - {name: a, action: noop}\n", `x.yaml:4: step name "a" is used twice`},
		{"NoAction", "name: x\nsteps:\n  - {name: a}\n", "x.yaml:3: a step has exactly one of"},
		{"BadTemplate", "name: x\nsteps:\n  - {name: a, action: noop, with: {h: \"{{ .params.app \"}}\n", "x.yaml:3: step a: with:"},
		{"BadDuration", "name: x\nsteps:\n  - {name: a, action: noop, timeout: soon}\n", `x.yaml:3: step a: timeout: "soon"`},
		{"BadJoin", "name: x\nsteps:\n  - parallel: {join: most, steps: [{name: a, action: noop}]}\n", `join "most"`},
		{"BadQuorum", "name: x\nsteps:\n  - parallel: {join: quorum:3, steps: [{name: a, action: noop}]}\n", "quorum must be between"},
		{"ForEachNotList", "name: x\nparams: [{name: r, type: string}]\nsteps:\n  - {for_each: \"{{ .params.r }}\", step: {name: a, action: noop}}\n", "naming a list parameter"},
		{"BadParamType", "name: x\nparams:\n  - {name: r, type: float}\nsteps:\n  - {name: a, action: noop}\n", "x.yaml:3: parameter r: unknown type"},
		{"BadRole", "name: x\nsteps:\n  - {name: a, action: noop, approval: {roles: [boss]}}\n", `unknown approval role "boss"`},
		{"NotYAML", "name: [x\n", "x.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tt.doc))
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestLoadDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) { require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)) }
	write("a.yaml", "name: alpha\nsteps:\n  - {name: a, action: noop}\n")
	write("b.yml", "name: noop\ndescription: replaced\nsteps:\n  - {name: b, action: noop}\n")
	write("c.txt", "not a pipeline")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	write("sub/d.yaml", "broken: [")
	loaded, err := LoadDir(dir)
	require.NoError(t, err)
	require.Len(t, loaded, 2)
	require.Equal(t, dir, loaded[0].Dir)
	c, err := NewCatalog(append(Builtin(), loaded...)...)
	require.NoError(t, err)
	noop, _ := c.Get("noop")
	require.Equal(t, "replaced", noop.Description, "a file replaces a built-in of the same name")

	write("e.yaml", "name: bad\nsteps: []\n")
	_, err = LoadDir(dir)
	require.ErrorContains(t, err, "e.yaml:1: a pipeline needs at least one step")
}
