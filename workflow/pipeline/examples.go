package pipeline

import (
	"embed"
	"fmt"
	"io/fs"
)

// examplesFS holds the example pipelines shipped as built-ins: written in
// the file format so operators can copy them into FLIGHTDECK_PIPELINES.
//
//go:embed examples/*.yaml
var examplesFS embed.FS

// examples parses the embedded example pipelines, afresh on each call so
// no two catalogs share (and compile) the same *Pipeline. Like built-ins,
// their Dir is "": exec steps run in the server's working directory. An
// example that does not load is a programming error, caught by
// TestBuiltinExamples.
func examples() []*Pipeline {
	names, err := fs.Glob(examplesFS, "examples/*.yaml")
	if err != nil {
		panic(err)
	}
	out := make([]*Pipeline, 0, len(names))
	for _, n := range names {
		data, err := examplesFS.ReadFile(n)
		if err != nil {
			panic(err)
		}
		p, err := Parse(n, data)
		if err != nil {
			panic(fmt.Sprintf("built-in pipeline: %v", err))
		}
		out = append(out, p)
	}
	return out
}
