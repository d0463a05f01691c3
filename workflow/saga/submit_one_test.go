package saga_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOneSubmitFunction: outside the store, only saga.Submit inserts
// tasks (design.md: a task is submitted through one function). A caller
// that inserted a task itself could skip its environment's rules, as a
// seventh way of submitting once would have; the burn-down's bulk insert
// (TaskInsertMany) is the benchmark's set-up, not a submit.
func TestOneSubmitFunction(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			// the store defines it; testfactory is test-only fixtures
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || rel == "store" || rel == filepath.Join("internal", "testfactory") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || rel == filepath.Join("workflow", "saga", "submit.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "TaskInsert" {
				found = append(found, rel)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, found, "these insert tasks without saga.Submit (plan, environment rules, insert)")
}
