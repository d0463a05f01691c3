package pipeline

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPatternMaxLen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		want    int
	}{
		{`^[a-z][a-z0-9-]{0,30}$`, 31},
		{`^[0-9A-Za-z.+-]{1,40}$`, 40},
		{`^/[A-Za-z0-9._~/-]{0,200}$`, 201},
		{`^(blue|green|canary-1)$`, 8},
		{`^v[0-9]+$`, 0},               // unbounded
		{`[a-z]{1,5}`, 0},              // not anchored: longer values match too
		{`^[a-z]{1,5}`, 0},             // anchored at one end only
		{`^x{1,5000}$`, 0},             // above the global limit
		{`^[a-z]{2}-[a-z]+-[0-9]$`, 0}, // a + inside
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, patternMaxLen(tt.pattern))
		})
	}
}

// The browser's pattern must accept and refuse what the server does; the
// JavaScript dialect is checked by the Playwright spec, the shape here
// with Go's engine (the subset is read alike by both).
func TestHTMLPattern(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, want string
		accept, deny  []string
	}{
		{`^[a-z][a-z0-9-]{0,30}$`, `[a-z](?:[\u{2d}0-9a-z]){0,30}`, []string{"shop", "a-1"}, []string{"Shop", "1a", "a_b", ""}},
		{`^[0-9A-Za-z.+-]{1,40}$`, `(?:[\u{2b}\u{2d}-\u{2e}0-9A-Za-z]){1,40}`, []string{"1.2.3", "2024.06.1-rc1+b"}, []string{"1 2", "", "é"}},
		{`^(blue|green)$`, `(?:(?:blue|green))`, []string{"blue"}, []string{"bluegreen", "red"}},
		{`v[0-9]+`, `[\s\S]*v(?:[0-9])+[\s\S]*`, []string{"v1", "xv12y"}, []string{"v", "x"}},
		{`(?i)^abc$`, ``, nil, nil}, // case folding: not carried over
		{`^a\bb$`, ``, nil, nil},    // word boundaries: not carried over
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()
			p := Param{Name: "x", Type: "string", Pattern: tt.pattern}
			got := p.HTMLPattern()
			require.Equal(t, tt.want, got)
			if got == "" {
				return
			}
			goForm := regexp.MustCompile(`^(?:` + strings.NewReplacer(`\u{2d}`, `\-`, `\u{2b}`, `\+`, `\u{2e}`, `\.`).Replace(got) + `)$`)
			for _, s := range tt.accept {
				require.True(t, goForm.MatchString(s), s)
			}
			for _, s := range tt.deny {
				require.False(t, goForm.MatchString(s), s)
			}
		})
	}
}

func TestValidateAll(t *testing.T) {
	t.Parallel()
	ws, ok := catalog(t).Get("web-service")
	require.True(t, ok)

	t.Run("EveryErrorAtOnce", func(t *testing.T) {
		t.Parallel()
		_, errs := ws.ValidateAll([]byte(`{"app":"Shop!","env":"prod","replicas":9,"colour":"red","size":1}`))
		require.Equal(t, []FieldError{
			{Field: "params.app", Message: "must be lowercase letters, digits and dashes, starting with a letter, up to 31 characters"},
			{Field: "params.version", Message: "is required"},
			{Field: "params.env", Message: "must be one of staging, production"},
			{Field: "params.replicas", Message: "must be at most 5"},
			{Field: "params.colour", Message: "unknown parameter of pipeline web-service"},
			{Field: "params.size", Message: "unknown parameter of pipeline web-service"},
		}, errs)
		_, first := ws.Validate([]byte(`{"app":"Shop!","env":"prod"}`))
		require.Equal(t, "params.app", first.Field)
	})

	t.Run("LengthSaysTheRealLimit", func(t *testing.T) {
		t.Parallel()
		_, errs := ws.ValidateAll([]byte(`{"app":"shop","version":"` + strings.Repeat("1", 5000) + `"}`))
		require.Equal(t, []FieldError{{Field: "params.version", Message: "must be at most 40 characters (this one has 5000)"}}, errs)
	})

	t.Run("NoHintNoRegex", func(t *testing.T) {
		t.Parallel()
		p := &Pipeline{Name: "x", Params: []Param{{Name: "tag", Type: "string", Pattern: `^v[0-9]+$`}}}
		_, err := NewCatalog(p)
		require.NoError(t, err)
		_, errs := p.ValidateAll([]byte(`{"tag":"x"}`))
		require.Len(t, errs, 1)
		require.NotContains(t, errs[0].Message, "^v")
		require.Equal(t, "must look like v1", errs[0].Message) // an example made from the pattern
	})

	t.Run("MaxLengthDeclared", func(t *testing.T) {
		t.Parallel()
		three := int64(3)
		p := &Pipeline{Name: "x", Params: []Param{{Name: "code", Type: "string", MaxLength: &three}, {Name: "tags", Type: "list", MaxLength: &three}}}
		_, err := NewCatalog(p)
		require.NoError(t, err)
		require.Equal(t, 3, p.Params[0].MaxLen())
		_, errs := p.ValidateAll([]byte(`{"code":"äbcd","tags":["ab","abcd"]}`))
		require.Equal(t, []FieldError{
			{Field: "params.code", Message: "must be at most 3 characters (this one has 4)"},
			{Field: "params.tags", Message: "item 2 must be at most 3 characters (this one has 4)"},
		}, errs)
		_, errs = p.ValidateAll([]byte(`{"code":"äbc"}`)) // characters, not bytes
		require.Empty(t, errs)
	})
}

func TestParamHintAndMaxLength(t *testing.T) {
	t.Parallel()
	doc := "name: x\nparams:\n  - {name: app, type: string, max_length: 12, hint: a short name}\nsteps: [{name: a, action: noop}]\n"
	p, err := Parse("x.yaml", []byte(doc))
	require.NoError(t, err)
	require.Equal(t, "a short name", p.Params[0].Hint)
	require.Equal(t, 12, p.Params[0].MaxLen())
	require.Equal(t, "a short name", p.Params[0].Describe())

	for _, bad := range []struct{ doc, want string }{
		{"name: x\nparams:\n  - {name: n, type: int, max_length: 3}\nsteps: [{name: a, action: noop}]\n", "max_length does not apply to type int"},
		{"name: x\nparams:\n  - {name: n, type: string, max_length: 0}\nsteps: [{name: a, action: noop}]\n", "max_length must be between 1 and 4096"},
		{"name: x\nparams:\n  - {name: n, type: string, max_length: 2, default: abc}\nsteps: [{name: a, action: noop}]\n", "default abc: must be at most 2 characters"},
	} {
		_, err := Parse("x.yaml", []byte(bad.doc))
		require.ErrorContains(t, err, bad.want)
	}
}

func TestApprovalRules(t *testing.T) {
	t.Parallel()
	ws, _ := catalog(t).Get("web-service")
	require.Equal(t, []ApprovalRule{{Step: "deploy_container", Roles: []string{"approver", "admin"}, When: "env is production"}}, ws.ApprovalRules())

	tests := []struct{ when, words string }{
		{`{{ eq .params.env "production" }}`, "env is production"},
		{`{{ne .params.region "eu"}}`, "region is not eu"},
		{`{{ .params.critical }}`, "critical is on"},
		{`{{ not .params.dry_run }}`, "dry_run is off"},
		{`{{ and (eq .params.env "production") .params.critical }}`, "env is production and critical is on"},
		{`{{ or (eq .params.replicas 5) (ne .params.env "staging") }}`, "replicas is 5 or env is not staging"},
		{`{{ if eq .params.env "x" }}true{{ end }}`, ""},
		{`{{ gt .params.replicas 3 }}`, ""},
		{`{{ eq .task.team "ops" }}`, ""},
		{`{{ eq .params.env `, ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.words, whenInWords(tt.when), tt.when)
	}
	p := &Pipeline{Name: "x", Steps: []Step{
		{Parallel: &Group{Steps: []Step{{Name: "a", Approval: &Approval{When: `{{ gt .params.n 3 }}`}}, {Name: "b"}}}},
		{ForEach: &ForEach{Step: Step{Name: "each", Approval: &Approval{Roles: []string{"admin"}}}}},
	}}
	require.Equal(t, []ApprovalRule{
		{Step: "a", Roles: []string{"approver", "admin"}, Expr: `{{ gt .params.n 3 }}`},
		{Step: "each", Roles: []string{"admin"}},
	}, p.ApprovalRules())
}
