package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/environment"
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
      count: 3
      ratio: 0.5
      verbose: true
      nothing: null
      nested: {deep: {list: [1, "two", {three: 3}]}}
      day: 2024-01-02
    compensate:
      action: exec
      with: {command: ["./scripts/undo.sh", "{{ .task.id }}"]}
      retries: 2
      timeout: 1m
    compensate_on_failure: true
    approval:
      when: '{{ eq .params.env "production" }}'
      roles: [approver]
      timeout: 30m
  - parallel:
      join: quorum:2
      timeout: 10m
      steps:
        - {name: a, action: noop, approval: {}}
        - {name: b, action: noop}
        - {name: c, action: noop}
  - for_each: "{{ .params.regions }}"
    concurrency: 3
    join: any
    timeout: 15m
    step: {name: deploy_region, action: exec, with: {command: ["echo", "{{ .item }}", "{{ .task.team }}"]}}
`

func TestParse(t *testing.T) {
	t.Parallel()

	t.Run("AllFields", func(t *testing.T) {
		t.Parallel()
		p, err := Parse("x.yaml", []byte(good))
		require.NoError(t, err)
		require.Equal(t, "example-service", p.Name)
		require.Equal(t, "Deploy with DNS and a smoke test", p.Description)
		require.Empty(t, p.Dir, "Parse leaves Dir to LoadFile")
		require.Len(t, p.Params, 5)
		require.Equal(t, "staging", p.Params[1].Default)
		require.Equal(t, 1, p.Params[2].Default)
		require.EqualValues(t, 1, *p.Params[2].Min)
		require.EqualValues(t, 5, *p.Params[2].Max)
		require.True(t, p.Params[0].Required)
		require.True(t, p.Params[4].Secret)

		dns := p.Steps[0]
		require.Equal(t, "local.dns_create", dns.Action)
		require.Equal(t, 30*time.Second, dns.Timeout)
		require.Equal(t, 3, dns.Retries)
		require.Equal(t, &Compensation{Action: "local.dns_delete", Retries: CompensationRetriesDefault, Timeout: StepTimeoutDefault}, dns.Compensate)

		smoke := p.Steps[1]
		require.Equal(t, map[string]any{
			"command": []any{"./scripts/smoke.sh", "{{ .params.app }}"},
			"env":     map[string]any{"TARGET": "{{ .params.env }}"},
			"count":   3,
			"ratio":   0.5,
			"verbose": true,
			"nothing": nil,
			"nested":  map[string]any{"deep": map[string]any{"list": []any{1, "two", map[string]any{"three": 3}}}},
			"day":     "2024-01-02",
		}, smoke.With, "YAML values become string, int, float64, bool, nil, []any and map[string]any")
		require.Equal(t, StepTimeoutDefault, smoke.Timeout)
		require.Zero(t, smoke.Retries)
		require.True(t, smoke.CompensateOnFailure)
		require.Equal(t, &Compensation{Action: "exec", With: map[string]any{"command": []any{"./scripts/undo.sh", "{{ .task.id }}"}}, Retries: 2, Timeout: time.Minute}, smoke.Compensate)
		require.Equal(t, &Approval{When: `{{ eq .params.env "production" }}`, Roles: []string{"approver"}, Timeout: 30 * time.Minute}, smoke.Approval)

		grp := p.Steps[2].Parallel
		require.Equal(t, "quorum", grp.Join)
		require.Equal(t, 2, grp.Quorum)
		require.Equal(t, 10*time.Minute, grp.Timeout)
		require.Len(t, grp.Steps, 3)
		require.Equal(t, &Approval{Roles: []string{"approver", "admin"}, Timeout: ApprovalTimeoutDefault}, grp.Steps[0].Approval, "approval: {} takes the defaults")

		fe := p.Steps[3].ForEach
		require.Equal(t, "{{ .params.regions }}", fe.Items)
		require.Equal(t, 3, fe.Concurrency)
		require.Equal(t, "any", fe.Join)
		require.Equal(t, 15*time.Minute, fe.Timeout)
		require.Equal(t, "deploy_region", fe.Step.Name)
		require.Equal(t, StepTimeoutDefault, fe.Step.Timeout)

		require.Equal(t, []string{"create_dns", "smoke", "a", "b", "c", "deploy_region"}, p.StepNames())
		_, err = NewCatalog(p)
		require.NoError(t, err)
		params, ferr := p.Validate([]byte(`{"app":"shop","regions":["eu","us"]}`))
		require.Nil(t, ferr)
		stages, total, err := p.Plan(params)
		require.NoError(t, err)
		require.Equal(t, 7, total)
		require.Equal(t, "deploy_region[us]", stages[3].Steps[1].Name)
	})

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		p, err := Parse("x.yaml", []byte("name: x\nsteps:\n  - {name: a, action: noop, compensate: {action: noop}}\n  - parallel: {steps: [{name: b, action: noop}]}\n  - for_each: '{{.params.r}}'\n    step: {name: c, action: noop}\nparams: [{name: r, type: list, default: [eu]}]\n"))
		require.NoError(t, err)
		require.Equal(t, StepTimeoutDefault, p.Steps[0].Timeout)
		require.Equal(t, CompensationRetriesDefault, p.Steps[0].Compensate.Retries)
		require.Equal(t, StepTimeoutDefault, p.Steps[0].Compensate.Timeout)
		require.Nil(t, p.Steps[0].With)
		require.Nil(t, p.Steps[0].Approval)
		require.Equal(t, &Group{Join: "all", Steps: []Step{{Name: "b", Action: "noop", Timeout: StepTimeoutDefault}}}, p.Steps[1].Parallel)
		require.Equal(t, "all", p.Steps[2].ForEach.Join)
		require.Zero(t, p.Steps[2].ForEach.Concurrency)
		require.Equal(t, []any{"eu"}, p.Params[0].Default)
	})

	t.Run("AnchorsAndMergeKeys", func(t *testing.T) {
		t.Parallel()
		doc := `name: x
steps:
  - name: a
    action: exec
    with: &common {command: [echo, hi], env: {A: "1"}}
  - name: b
    action: exec
    with:
      <<: *common
      command: [echo, bye]
  - <<: {action: noop, timeout: 1m}
    name: c
`
		p, err := Parse("x.yaml", []byte(doc))
		require.NoError(t, err)
		require.Equal(t, map[string]any{"command": []any{"echo", "bye"}, "env": map[string]any{"A": "1"}}, p.Steps[1].With, "keys written win over merged ones")
		require.Equal(t, "noop", p.Steps[2].Action)
		require.Equal(t, time.Minute, p.Steps[2].Timeout)
	})

	t.Run("ScalarsAsTextAndATrailingDocumentMarker", func(t *testing.T) {
		t.Parallel()
		p, err := Parse("x.yaml", []byte("---\nname: 2024\ndescription: 1.5\nsteps:\n  - {name: 1, action: noop}\n---\n"))
		require.NoError(t, err)
		require.Equal(t, "2024", p.Name)
		require.Equal(t, "1.5", p.Description)
		require.Equal(t, "1", p.Steps[0].Name)
	})
}

// aliasBomb expands to 10^9 values (a "billion laughs").
var aliasBomb = func() string {
	var b strings.Builder
	b.WriteString("name: x\nsteps:\n  - name: a\n    action: noop\n    with:\n      l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "      l%d: &l%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}()

func TestParseErrors(t *testing.T) {
	t.Parallel()
	const step = "name: x\nsteps:\n  - "
	const listParam = "name: x\nparams: [{name: r, type: list}]\nsteps:\n  - "
	tests := []struct {
		name string
		doc  string
		line int
		want string
	}{
		// YAML itself.
		{"Empty", "", 1, "empty file"},
		{"OnlyComments", "# nothing\n", 1, "empty file"},
		{"NotYAML", "name: x\nsteps: [\n", 2, "invalid YAML"},
		{"TabIndent", "name: x\n\tsteps: []\n", 2, "invalid YAML"},
		{"UnclosedFlowList", "name: x\nsteps: [1, 2\nfoo: 3\n", 3, "invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence from line 2)"},
		{"SecondDocument", "name: x\nsteps: [{name: a, action: noop}]\n---\nname: y\n", 3, "a second YAML document"},
		{"NotAMapping", "- name: x\n", 1, "pipeline: expected a mapping, found a list"},
		{"SecondDocumentAfterEmpty", "name: x\nsteps: [{name: a, action: noop}]\n---\n---\nname: y\n", 4, "a second YAML document"},
		{"RepeatedKey", step + "name: a\n    action: noop\n    action: exec\n", 5, `step 1: field "action" is set twice (first at line 4)`},
		{"SelfAlias", step + "name: a\n    action: noop\n    with: &w\n      b: *w\n", 6, "with.b: alias *w is used inside its own value"},
		{"SelfMerge", step + "name: a\n    action: noop\n    with: &w\n      <<: *w\n", 6, "alias *w is used inside its own value"},
		{"AliasBomb", aliasBomb, 6, "more than 100000 YAML nodes"},

		// Unknown fields, everywhere.
		{"UnknownFieldTop", "name: x\nstpes: []\n", 2, `pipeline: unknown field "stpes"`},
		{"UnknownFieldStep", step + "name: deploy\n    actoin: noop\n", 4, `step "deploy": unknown field "actoin"`},
		{"UnknownFieldParam", "name: x\nparams:\n  - {name: r, type: string, requird: true}\nsteps: [{name: a, action: noop}]\n", 3, `parameter "r": unknown field "requird"`},
		{"UnknownFieldCompensate", step + "name: a\n    action: noop\n    compensate: {action: noop, retry: 1}\n", 5, `step "a": compensate: unknown field "retry"`},
		{"UnknownFieldApproval", step + "name: a\n    action: noop\n    approval: {who: [admin]}\n", 5, `step "a": approval: unknown field "who"`},
		{"UnknownFieldParallel", step + "parallel:\n      joins: all\n      steps: [{name: a, action: noop}]\n", 4, `step 1: parallel: unknown field "joins"`},
		{"UnknownFieldInGroupStep", step + "parallel:\n      steps:\n        - {name: a, action: noop, retires: 1}\n", 5, `step "a": unknown field "retires"`},
		{"UnknownFieldForEach", listParam + "for_each: '{{ .params.r }}'\n    parallelism: 2\n    step: {name: a, action: noop}\n", 5, `step 1: unknown field "parallelism"`},
		{"ConcurrencyOnSingleStep", step + "name: a\n    action: noop\n    concurrency: 2\n", 5, `step "a": unknown field "concurrency"`},

		// Names.
		{"MissingName", "description: d\nsteps: [{name: a, action: noop}]\n", 1, "pipeline: name is missing"},
		{"BadName", "name: Bad Name\nsteps:\n  - {name: a, action: noop}\n", 1, `pipeline: name "Bad Name" must match ^[a-z0-9-]+$`},
		{"NameNotScalar", "name: [x]\nsteps: []\n", 1, "pipeline: name must be a single value, found a list"},
		{"StepsNotAList", "name: x\nsteps: {name: a, action: noop}\n", 2, "pipeline: steps must be a list, found a mapping"},
		{"ParamsNotAList", "name: x\nparams: app\nsteps: [{name: a, action: noop}]\n", 2, `pipeline: params must be a list, found "app"`},
		{"ParamRequiredNotBool", "name: x\nparams: [{name: r, type: string, required: 'yes'}]\nsteps: [{name: a, action: noop}]\n", 2, `parameter "r": required must be true or false, found "yes"`},
		{"NoSteps", "name: x\nsteps: []\n", 2, "a pipeline needs at least one step"},
		{"StepsMissing", "name: x\n", 1, "pipeline: steps are missing"},
		{"StepNameMissing", step + "{action: noop}\n", 3, "step 1: name is missing"},
		{"StepNameBrackets", step + "{name: 'a[1]', action: noop}\n", 3, "cannot contain [ or ]"},
		{"DuplicateStep", step + "{name: a, action: noop}\n  - {name: a, action: noop}\n", 4, `step name "a" is used twice (first at line 3)`},
		{"DuplicateStepInParallel", step + "{name: a, action: noop}\n  - parallel:\n      steps:\n        - {name: b, action: noop}\n        - {name: a, action: noop}\n", 7, `step name "a" is used twice (first at line 3)`},
		{"DuplicateStepInForEach", listParam + "{name: a, action: noop}\n  - for_each: '{{ .params.r }}'\n    step: {name: a, action: noop}\n", 6, `step name "a" is used twice (first at line 4)`},

		// What a step is.
		{"NoAction", step + "{name: a}\n", 3, `step "a": needs one of action, parallel or for_each`},
		{"EmptyAction", step + "{name: a, action: ''}\n", 3, `step "a": action is empty`},
		{"ActionAndParallel", step + "name: a\n    action: noop\n    parallel: {steps: [{name: b, action: noop}]}\n", 5, `step "a": has both action and parallel`},
		{"ParallelAndForEach", listParam + "parallel: {steps: [{name: b, action: noop}]}\n    for_each: '{{ .params.r }}'\n", 5, "has both parallel and for_each"},
		{"NestedParallel", step + "parallel:\n      steps:\n        - parallel: {steps: [{name: b, action: noop}]}\n", 5, "parallel cannot be nested in a group"},
		{"ForEachOfParallel", listParam + "for_each: '{{ .params.r }}'\n    step: {parallel: {steps: [{name: b, action: noop}]}}\n", 5, "parallel cannot be nested in a group"},
		{"NamedGroup", step + "name: g\n    parallel: {steps: [{name: b, action: noop}]}\n", 3, "a parallel group has no name of its own"},
		{"EmptyGroup", step + "parallel: {steps: []}\n", 3, "a group needs at least one step"},
		{"CompensateWithoutAction", step + "{name: a, action: noop, compensate: {retries: 1}}\n", 3, `step "a": compensate: action is missing`},
		{"WithNotMapping", step + "{name: a, action: exec, with: [echo]}\n", 3, "with must be a mapping, not a list"},
		{"BoolNotBool", step + "{name: a, action: noop, compensate_on_failure: sure}\n", 3, `compensate_on_failure must be true or false, found "sure"`},
		{"OnFailureUnknown", "name: x\non_failure: pray\nsteps: [{name: a, action: noop}]\n", 2, `pipeline: on_failure "pray" (want ask or compensate)`},
		{"DecisionTimeoutNotDuration", "name: x\non_failure: ask\ndecision_timeout: soon\nsteps: [{name: a, action: noop}]\n", 3, `decision_timeout "soon" is not a positive duration`},

		// Parameters, by compile's rules, at the line of the field at fault.
		{"ParamBadType", "name: x\nparams:\n  - name: r\n    type: float\nsteps: [{name: a, action: noop}]\n", 4, `parameter r: unknown type "float"`},
		{"ParamBadName", "name: x\nparams:\n  - name: Region\n    type: string\nsteps: [{name: a, action: noop}]\n", 3, `parameter name "Region"`},
		{"ParamMissingType", "name: x\nparams:\n  - name: r\nsteps: [{name: a, action: noop}]\n", 3, `parameter "r": type is missing`},
		{"ParamEnumNoValues", "name: x\nparams:\n  - name: r\n    type: enum\nsteps: [{name: a, action: noop}]\n", 4, "parameter r: an enum needs values"},
		{"ParamBadPattern", "name: x\nparams:\n  - name: r\n    type: string\n    pattern: '^(a'\nsteps: [{name: a, action: noop}]\n", 5, "parameter r: bad pattern"},
		{"ParamBadDefault", "name: x\nparams:\n  - name: r\n    type: enum\n    values: [a, b]\n    default: c\nsteps: [{name: a, action: noop}]\n", 6, "parameter r: default c: must be one of a, b"},
		{"ParamDefaultBelowMin", "name: x\nparams:\n  - {name: n, type: int, min: 2,\n     default: 1}\nsteps: [{name: a, action: noop}]\n", 4, "must be at least 2"},
		{"ParamDefaultWrongType", "name: x\nparams:\n  - {name: r, type: string, default: 5}\nsteps: [{name: a, action: noop}]\n", 3, "default 5: must be a string"},
		{"ParamDuplicate", "name: x\nparams:\n  - {name: r, type: string}\n  - {name: r, type: int}\nsteps: [{name: a, action: noop}]\n", 4, `parameter "r" is declared twice (first at line 3)`},
		{"ParamValuesOnString", "name: x\nparams:\n  - {name: r, type: string, values: [a]}\nsteps: [{name: a, action: noop}]\n", 3, "values does not apply to type string"},
		{"ParamMinAboveMax", "name: x\nparams:\n  - {name: n, type: int, min: 5, max: 1}\nsteps: [{name: a, action: noop}]\n", 3, "max 1 is less than min 5"},

		// Templates in with (recursively) and approval.when.
		{"BadTemplate", step + "{name: a, action: noop, with: {h: \"{{ .params.app \"}}\n", 3, `step "a": with.h: invalid template`},
		{"BadTemplateDeep", step + "name: a\n    action: exec\n    with:\n      command:\n        - echo\n        - \"{{ if }}\"\n", 8, `step "a": with.command[1]: invalid template`},
		{"BadTemplateInMapInList", step + "name: a\n    action: http\n    with:\n      body: [{x: \"{{ end }}\"}]\n", 6, "with.body[0].x: invalid template"},
		{"BadTemplateCompensate", step + "name: a\n    action: noop\n    compensate:\n      action: exec\n      with: {command: [\"{{\"]}\n", 7, `step "a": compensate: with.command[0]: invalid template`},
		{"BadWhen", step + "name: a\n    action: noop\n    approval:\n      when: '{{ eq .params.env }'\n", 6, `step "a": approval: when: invalid template`},
		{"UnknownParamInTemplate", "name: x\nparams: [{name: app, type: string}]\nsteps:\n  - {name: a, action: noop, with: {h: '{{ .params.ap }}'}}\n", 4, "unknown parameter .params.ap"},
		{"UnknownParamInWhen", step + "{name: a, action: noop, approval: {when: '{{ eq .params.env \"p\" }}'}}\n", 3, "unknown parameter .params.env"},
		{"UnknownParamViaDollar", step + "{name: a, action: noop, with: {h: '{{ range .task }}{{ $.params.x }}{{ end }}'}}\n", 3, "unknown parameter .params.x"},
		{"UnknownTaskField", step + "{name: a, action: noop, with: {h: '{{ .task.name }}'}}\n", 3, "unknown field .task.name"},
		{"UnknownRootField", step + "{name: a, action: noop, with: {h: '{{ .param.app }}'}}\n", 3, "unknown field .param"},
		{"TemplateCall", step + "{name: a, action: noop, with: {h: '{{ template \"x\" }}'}}\n", 3, "cannot call others"},
		{"UnknownFieldInElse", "name: x\nparams: [{name: p, type: string}]\nsteps:\n  - {name: a, action: noop, with: {h: '{{ with .params.p }}{{ .ok }}{{ else }}{{ .nope }}{{ end }}'}}\n", 4, "unknown field .nope"},
		{"ItemOutsideForEach", step + "{name: a, action: noop, with: {h: '{{ .item }}'}}\n", 3, ".item is only set in the step of a for_each"},

		// Durations and retries.
		{"BadDuration", step + "{name: a, action: noop, timeout: soon}\n", 3, `step "a": timeout "soon" is not a positive duration like 30s or 5m`},
		{"DurationWithoutUnit", step + "name: a\n    action: noop\n    timeout: 30\n", 5, `timeout "30" is not a positive duration`},
		{"ZeroDuration", step + "{name: a, action: noop, timeout: 0s}\n", 3, `timeout "0s" is not a positive duration`},
		{"NegativeDuration", step + "{name: a, action: noop, timeout: -5m}\n", 3, `timeout "-5m" is not a positive duration`},
		{"BadCompensateTimeout", step + "{name: a, action: noop, compensate: {action: noop, timeout: 1y}}\n", 3, `compensate: timeout "1y"`},
		{"BadApprovalTimeout", step + "{name: a, action: noop, approval: {timeout: never}}\n", 3, `approval: timeout "never"`},
		{"BadParallelTimeout", step + "parallel:\n      timeout: 0m\n      steps: [{name: a, action: noop}]\n", 4, `parallel: timeout "0m"`},
		{"BadForEachTimeout", listParam + "for_each: '{{ .params.r }}'\n    timeout: x\n    step: {name: a, action: noop}\n", 5, `for_each: timeout "x"`},
		{"RetriesNegative", step + "{name: a, action: noop, retries: -1}\n", 3, "retries -1 must be between 0 and 20"},
		{"RetriesTooMany", step + "{name: a, action: noop, retries: 21}\n", 3, "retries 21 must be between 0 and 20"},
		{"RetriesNotInteger", step + "{name: a, action: noop, retries: many}\n", 3, `retries must be an integer, found "many"`},
		{"CompensateRetriesTooMany", step + "name: a\n    action: noop\n    compensate:\n      action: noop\n      retries: 50\n", 7, "compensate: retries 50 must be between 0 and 20"},

		// Joins.
		{"BadJoin", step + "parallel: {join: most, steps: [{name: a, action: noop}]}\n", 3, `join "most": want all, any or quorum:N`},
		{"QuorumTooBig", step + "parallel:\n      join: quorum:3\n      steps: [{name: a, action: noop}, {name: b, action: noop}]\n", 4, `join "quorum:3": N must be between 1 and 2`},
		{"QuorumZero", step + "parallel: {join: 'quorum:0', steps: [{name: a, action: noop}]}\n", 3, "N must be between 1 and 1"},
		{"QuorumNotNumber", step + "parallel: {join: 'quorum:two', steps: [{name: a, action: noop}]}\n", 3, `join "quorum:two"`},
		{"ForEachBadJoin", listParam + "for_each: '{{ .params.r }}'\n    join: every\n    step: {name: a, action: noop}\n", 5, `for_each: join "every"`},
		{"ForEachQuorumZero", listParam + "for_each: '{{ .params.r }}'\n    join: quorum:0\n    step: {name: a, action: noop}\n", 5, "N must be between 1 and 100"},

		// for_each items and concurrency.
		{"ForEachNotTemplate", listParam + "for_each: r\n    step: {name: a, action: noop}\n", 4, `must be exactly "{{ .params.NAME }}" naming a list parameter, not "r"`},
		{"ForEachTwoParams", listParam + "for_each: '{{ .params.r }}{{ .params.r }}'\n    step: {name: a, action: noop}\n", 4, "must be exactly"},
		{"ForEachExpression", listParam + "for_each: '{{ slice .params.r 1 }}'\n    step: {name: a, action: noop}\n", 4, "must be exactly"},
		{"ForEachUnknownParam", listParam + "for_each: '{{ .params.regions }}'\n    step: {name: a, action: noop}\n", 4, `unknown parameter "regions"`},
		{"ForEachNotList", "name: x\nparams: [{name: r, type: string}]\nsteps:\n  - {for_each: \"{{ .params.r }}\", step: {name: a, action: noop}}\n", 4, `parameter "r" is of type string, not list`},
		{"ForEachNoStep", listParam + "for_each: '{{ .params.r }}'\n", 4, "for_each: step is missing"},
		{"ConcurrencyNegative", listParam + "for_each: '{{ .params.r }}'\n    concurrency: -1\n    step: {name: a, action: noop}\n", 5, "concurrency -1 is negative"},

		// Approval roles.
		{"BadRole", step + "name: a\n    action: noop\n    approval:\n      roles:\n        - approver\n        - boss\n", 8, `step "a": approval: unknown role "boss"`},
		{"EmptyRoles", step + "{name: a, action: noop, approval: {roles: []}}\n", 3, "roles is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("pipelines/x.yaml", []byte(tt.doc))
			require.Error(t, err)
			var le *LoadError
			require.True(t, errors.As(err, &le), "want a *LoadError, got %T: %v", err, err)
			require.Equal(t, "pipelines/x.yaml", le.Path)
			require.Equal(t, tt.line, le.Line, err.Error())
			require.Contains(t, err.Error(), "pipelines/x.yaml:"+strconv.Itoa(tt.line)+": ")
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestLoadDir(t *testing.T) {
	t.Parallel()

	write := func(t *testing.T, dir, name, body string) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}

	t.Run("YAMLFilesDirectlyInTheFolder", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		write(t, dir, "a.yaml", "name: alpha\nsteps:\n  - {name: a, action: noop}\n")
		write(t, dir, "b.yml", "name: noop\ndescription: replaced\nsteps:\n  - {name: b, action: noop}\n")
		write(t, dir, "c.txt", "not a pipeline")
		write(t, dir, "sub/d.yaml", "broken: [")
		write(t, dir, ".#e.yaml", "broken: [")
		require.NoError(t, os.Mkdir(filepath.Join(dir, "f.yaml"), 0o755))

		loaded, err := LoadDir(dir)
		require.NoError(t, err)
		require.Len(t, loaded, 2)
		require.Equal(t, "alpha", loaded[0].Name)
		require.Equal(t, "noop", loaded[1].Name)
		require.Equal(t, dir, loaded[0].Dir)

		c, err := NewCatalog(append(Builtin(), loaded...)...)
		require.NoError(t, err)
		require.Len(t, c.All(), len(Builtin())+1)
		noop, ok := c.Get("noop")
		require.True(t, ok)
		require.Equal(t, "replaced", noop.Description, "a file replaces a built-in of the same name")
		require.Equal(t, []string{"b"}, noop.StepNames())
	})

	t.Run("BrokenFileFailsTheLoad", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		write(t, dir, "a.yaml", "name: alpha\nsteps:\n  - {name: a, action: noop}\n")
		write(t, dir, "web.yaml", "name: web\nsteps:\n  - name: deploy\n    actoin: noop\n")
		_, err := LoadDir(dir)
		require.ErrorContains(t, err, filepath.Join(dir, "web.yaml")+`:4: step "deploy": unknown field "actoin" (want name, action, `)
	})

	t.Run("SameNameInTwoFiles", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		write(t, dir, "a.yaml", "name: web\nsteps:\n  - {name: a, action: noop}\n")
		write(t, dir, "b.yaml", "# again\nname: web\nsteps:\n  - {name: a, action: noop}\n")
		_, err := LoadDir(dir)
		require.EqualError(t, err, filepath.Join(dir, "b.yaml")+`:2: pipeline "web" is also defined in `+filepath.Join(dir, "a.yaml"))
	})

	t.Run("MissingFolder", func(t *testing.T) {
		t.Parallel()
		_, err := LoadDir(filepath.Join(t.TempDir(), "nope"))
		require.ErrorIs(t, err, os.ErrNotExist)
	})

	t.Run("RelativePathGivesAbsoluteDir", func(t *testing.T) {
		t.Parallel()
		loaded, err := LoadDir("examples")
		require.NoError(t, err)
		abs, err := filepath.Abs("examples")
		require.NoError(t, err)
		require.NotEmpty(t, loaded)
		for _, p := range loaded {
			require.Equal(t, abs, p.Dir)
		}
		p, err := LoadFile(filepath.Join("examples", "canary.yaml"))
		require.NoError(t, err)
		require.Equal(t, abs, p.Dir)
	})
}

func TestBuiltinExamples(t *testing.T) {
	t.Parallel()

	t.Run("CatalogLoadsEveryBuiltin", func(t *testing.T) {
		t.Parallel()
		builtin := Builtin()
		c, err := NewCatalog(builtin...)
		require.NoError(t, err)
		require.Len(t, c.All(), len(builtin), "built-in names are unique")
		for _, name := range []string{"noop", "web-service", "approval-demo", "static-site", "canary", "health-check", "web-service-canary"} {
			_, ok := c.Get(name)
			require.True(t, ok, name)
		}
		for _, p := range builtin {
			require.Empty(t, p.Dir, "%s: built-ins run in the server's working directory", p.Name)
			for _, s := range leafSteps(p) {
				require.True(t, builtinAction(s.Action), "%s: step %s uses action %s", p.Name, s.Name, s.Action)
				if s.Compensate != nil {
					require.True(t, builtinAction(s.Compensate.Action), "%s: step %s compensates with %s", p.Name, s.Name, s.Compensate.Action)
				}
			}
		}
	})

	t.Run("EveryCallParsesAfresh", func(t *testing.T) {
		t.Parallel()
		a, b := examples(), examples()
		require.Equal(t, a, b)
		require.NotSame(t, a[0], b[0], "catalogs must not share (and compile) one *Pipeline")
	})

	t.Run("StaticSite", func(t *testing.T) {
		t.Parallel()
		p := builtin(t, "static-site")
		grp := p.Steps[0].Parallel
		require.NotNil(t, grp)
		require.Equal(t, "all", grp.Join)
		require.Len(t, grp.Steps, 2)
		params, ferr := p.Validate([]byte(`{"site":"docs"}`))
		require.Nil(t, ferr)
		_, total, err := p.Plan(params)
		require.NoError(t, err)
		require.Equal(t, 3, total)
	})

	t.Run("Canary", func(t *testing.T) {
		t.Parallel()
		p := builtin(t, "canary")
		fe := p.Steps[1].ForEach
		require.NotNil(t, fe)
		require.Equal(t, 2, fe.Concurrency)
		require.Equal(t, "exec", fe.Step.Action)
		require.Equal(t, []any{"echo", "deploying", "{{ .params.version }}", "to", "{{ .item }}"}, fe.Step.With["command"], "argv, no shell")
		params, ferr := p.Validate([]byte(`{"version":"1.2.3","regions":["eu-west-1","us-east-1","ap-south-1"]}`))
		require.Nil(t, ferr)
		stages, total, err := p.Plan(params)
		require.NoError(t, err)
		require.Equal(t, 5, total)
		require.Equal(t, 2, stages[1].Concurrency)
		require.Equal(t, "deploy_region[us-east-1]", stages[1].Steps[1].Name)
		require.NotNil(t, p.Steps[2].Approval)
		_, ferr = p.Validate([]byte(`{"version":"1","regions":["eu; rm -rf /"]}`))
		require.NotNil(t, ferr)
	})

	t.Run("HealthCheck", func(t *testing.T) {
		t.Parallel()
		p := builtin(t, "health-check")
		s := p.Steps[0]
		require.Equal(t, "http", s.Action)
		require.Equal(t, 5, s.Retries)
		require.Equal(t, 30*time.Second, s.Timeout)
		_, ferr := p.Validate([]byte(`{"port":8080}`))
		require.Nil(t, ferr)
		_, ferr = p.Validate([]byte(`{"port":8080,"path":"@evil.example/"}`))
		require.NotNil(t, ferr, "the URL stays on the loopback address")
	})
}

func builtin(t *testing.T, name string) *Pipeline {
	t.Helper()
	c, err := NewCatalog(Builtin()...)
	require.NoError(t, err)
	p, ok := c.Get(name)
	require.True(t, ok, name)
	return p
}

// builtinAction tells whether a built-in may use action a: only the
// actions every server has.
func builtinAction(a string) bool {
	return a == "exec" || a == "http" || a == "noop" || a == "analysis" || strings.HasPrefix(a, "local.")
}

func leafSteps(p *Pipeline) []Step {
	var out []Step
	for _, s := range p.Steps {
		switch {
		case s.Parallel != nil:
			out = append(out, s.Parallel.Steps...)
		case s.ForEach != nil:
			out = append(out, s.ForEach.Step)
		default:
			out = append(out, s)
		}
	}
	return out
}

func TestParseOnFailure(t *testing.T) {
	p, err := Parse("x.yaml", []byte("name: x\non_failure: ask\ndecision_timeout: 15m\nsteps: [{name: a, action: noop}]\n"))
	require.NoError(t, err)
	require.True(t, p.AsksOnFailure(nil))
	require.Equal(t, 15*time.Minute, p.DecisionTimeoutOr())
	p, err = Parse("x.yaml", []byte("name: x\non_failure: compensate\nsteps: [{name: a, action: noop}]\n"))
	require.NoError(t, err)
	require.False(t, p.AsksOnFailure(nil))
	require.Equal(t, DecisionTimeoutDefault, p.DecisionTimeoutOr())
}

func TestCatalogAsksOnFailureByEnvironment(t *testing.T) {
	p, err := Parse("x.yaml", []byte("name: x\nparams: [{name: env, type: string}]\nsteps: [{name: a, action: noop}]\n"))
	require.NoError(t, err)
	c, err := NewCatalog(p)
	require.NoError(t, err)
	c.SetEnvironments(environment.NewRules(&environment.Env{Name: "production", OnFailure: OnFailureAsk}))
	require.True(t, c.AsksOnFailure(p, map[string]any{"env": "production"}))
	require.False(t, c.AsksOnFailure(p, map[string]any{"env": "staging"}))
	p.OnFailure = OnFailureAsk
	require.True(t, c.AsksOnFailure(p, map[string]any{"env": "staging"}), "the pipeline's own field")
}
