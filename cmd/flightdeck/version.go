package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"
)

// versionInfo is what `flightdeck version` prints, read from the build
// info Go stamps into every binary. Go records the commit's time, not the
// build's (builds are reproducible), so that is the time shown.
type versionInfo struct {
	Version    string `json:"version"`     // module version: a tag, or a pseudo-version made from the commit
	Commit     string `json:"commit"`      // vcs.revision; "" when built outside a git checkout
	CommitTime string `json:"commit_time"` // vcs.time, RFC 3339
	Modified   bool   `json:"modified"`    // vcs.modified: built from a tree with uncommitted changes
	GoVersion  string `json:"go"`
	Platform   string `json:"platform"` // GOOS/GOARCH
	CGO        bool   `json:"cgo"`      // false for the static build of `go tool task build:release`
}

// readVersion reads bi (from debug.ReadBuildInfo; nil when the binary has
// none) into a versionInfo.
func readVersion(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: "devel", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return v
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	v.GoVersion = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "CGO_ENABLED":
			v.CGO = s.Value == "1"
		}
	}
	return v
}

// runVersion is "flightdeck version [--json]".
func runVersion(env *cliEnv, args []string) error {
	fs := newFlagSet("version", env.stderr)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	v := readVersion(bi)
	if *asJSON {
		return json.NewEncoder(env.stdout).Encode(v)
	}
	commit := v.Commit
	switch {
	case commit == "":
		commit = "unknown (built outside a git checkout, or with -buildvcs=false)"
	case v.Modified:
		commit += " (with uncommitted changes)"
	}
	if t, err := time.Parse(time.RFC3339, v.CommitTime); err == nil {
		commit += ", committed " + t.UTC().Format(time.RFC3339)
	}
	cgo := "cgo off"
	if v.CGO {
		cgo = "cgo on"
	}
	_, err := fmt.Fprintf(env.stdout, "flightdeck %s\ncommit %s\n%s %s, %s\n", v.Version, commit, v.GoVersion, v.Platform, cgo)
	return err
}
