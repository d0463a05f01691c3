package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOneWritePath: every change of a task or a step goes through taskApply
// with its events (invariant 6). It reads the store's SQL (every string
// literal of its non-test files) and fails on any UPDATE of tasks or
// task_steps outside these functions:
//   - taskApply (task_write.go): the one write, with the events it brings;
//   - TaskClaim (task_claim.go): the claim takes a lease and writes no event
//     (design invariant 6: its running event rides the worker's first write);
//   - TaskHeartbeat (task_lease.go): extends a lease, no visible change;
//   - TaskMaintain (worker.go): forgets old idempotency keys (retention of
//     a key, nothing a client sees).
//
// The insert is an INSERT, not an UPDATE: it makes the row and its first
// event in one statement.
func TestOneWritePath(t *testing.T) {
	t.Parallel()
	allowed := map[string]string{
		"task_write.go": "taskApply",
		"task_claim.go": "TaskClaim",
		"task_lease.go": "TaskHeartbeat",
		"worker.go":     "TaskMaintain",
	}
	update := regexp.MustCompile(`(?i)\bupdate\s+(tasks|task_steps)\b`)
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	fset := token.NewFileSet()
	files := 0
	var found []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		files++
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			fn := "" // package level
			if d, ok := decl.(*ast.FuncDecl); ok {
				fn = d.Name.Name
			}
			ast.Inspect(decl, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || !update.MatchString(lit.Value) {
					return true
				}
				if allowed[name] != fn || fn == "" {
					found = append(found, fset.Position(lit.Pos()).String()+" in "+fn)
				}
				return true
			})
		}
	}
	require.Greater(t, files, 20, "the store's files were read")
	require.Empty(t, found, "UPDATE of tasks or task_steps outside the one write path")
}
