// Command testsummary reads `go test -json` on stdin, prints what a plain
// `go test` would (each package's ok/FAIL line, the output of failed tests,
// build errors), and ends with the slowest tests and packages, so the
// suite's time is seen on every run (Taskfile test:go pipes into it).
//
// It exits 0 whatever the tests did: the pipeline's status is go test's
// (the Taskfile sets pipefail).
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// event is one line of test2json's output (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type timing struct {
	name    string
	seconds float64
}

// top is how many of the slowest tests and packages are listed.
const top = 10

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
	}
}

func run(in io.Reader, out io.Writer) error {
	type key struct{ pkg, test string }
	// A test's output is held until it ends: shown when it failed (as
	// go test does), dropped when it passed.
	held := map[key][]string{}
	var tests, pkgs []timing
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line) // not an event: as it came
			continue
		}
		k := key{e.Package, e.Test}
		switch {
		case e.Action == "build-output":
			fmt.Fprint(out, e.Output)
		case e.Test != "" && e.Action == "output":
			held[k] = append(held[k], e.Output)
		case e.Test != "" && (e.Action == "pass" || e.Action == "skip"):
			delete(held, k)
			if e.Action == "pass" && !strings.Contains(e.Test, "/") {
				tests = append(tests, timing{e.Package + " " + e.Test, e.Elapsed})
			}
		case e.Test != "" && e.Action == "fail":
			fmt.Fprint(out, strings.Join(held[k], ""))
			delete(held, k)
			if !strings.Contains(e.Test, "/") {
				tests = append(tests, timing{e.Package + " " + e.Test, e.Elapsed})
			}
		case e.Test == "" && e.Action == "output":
			// The package's own lines: ok/FAIL/panics; a passing
			// package's bare PASS is not shown by go test either.
			if e.Output != "PASS\n" {
				fmt.Fprint(out, e.Output)
			}
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail"):
			if e.Action == "fail" {
				// Tests cut off by a panic or a timeout never ended: their
				// output tells why.
				for hk, o := range held {
					if hk.pkg == e.Package {
						fmt.Fprint(out, strings.Join(o, ""))
						delete(held, hk)
					}
				}
			}
			pkgs = append(pkgs, timing{e.Package, e.Elapsed})
		}
	}
	list(out, "tests", tests)
	list(out, "packages", pkgs)
	return sc.Err()
}

// list prints the slowest of ts.
func list(out io.Writer, what string, ts []timing) {
	if len(ts) == 0 {
		return
	}
	slices.SortStableFunc(ts, func(a, b timing) int { return cmp.Compare(b.seconds, a.seconds) })
	fmt.Fprintf(out, "\nslowest %s (seconds, wall clock; parallel tests overlap):\n", what)
	for _, t := range ts[:min(top, len(ts))] {
		fmt.Fprintf(out, "%8.2f  %s\n", t.seconds, t.name)
	}
}
