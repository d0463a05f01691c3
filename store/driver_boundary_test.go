package store_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pgx stays in store (design.md: "pgx only in store and internal/dbtest"):
// no other package of the module imports it in its non-test code. Test
// files are left out: they take a *pgxpool.Pool from dbtest.DB. Before,
// internal/notify imported pgx for its LISTEN connection.
func TestOnlyStoreImportsPgx(t *testing.T) {
	t.Parallel()
	// Infrastructure that is not the application's data access, each with
	// why (for the lead to keep or fold into store).
	allowed := map[string]string{
		"flightdeck/store":                "the one data access package",
		"flightdeck/internal/dbtest":      "test databases (design.md names it)",
		"flightdeck/internal/testfactory": "test-only fixtures, imported from _test.go files only",
		"flightdeck/internal/pgcluster":   "creates the embedded cluster's roles and databases as its superuser",
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.CommandContext(t.Context(), goBin, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "flightdeck/...").CombinedOutput()
	require.NoError(t, err, string(out))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Greater(t, len(lines), 20, "go list saw the module")
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg := fields[0]
		if _, ok := allowed[pkg]; ok {
			continue
		}
		for _, imp := range fields[1:] {
			require.False(t, strings.HasPrefix(imp, "github.com/jackc/"), "%s imports %s: pgx belongs in store", pkg, imp)
		}
	}
}
