package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestVersion(t *testing.T) {
	t.Parallel()

	t.Run("ReadsTheStampedBuildInfo", func(t *testing.T) {
		t.Parallel()
		v := readVersion(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "flightdeck", Version: "v1.4.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
				{Key: "vcs.time", Value: "2026-11-25T15:44:49Z"}, {Key: "vcs.modified", Value: "true"}, {Key: "CGO_ENABLED", Value: "0"}}})
		require.Equal(t, versionInfo{Version: "v1.4.0", Commit: "0123456789abcdef0123456789abcdef01234567", CommitTime: "2026-11-25T15:44:49Z",
			Modified: true, GoVersion: "go1.26.8", Platform: runtime.GOOS + "/" + runtime.GOARCH, CGO: false}, v)
	})

	t.Run("UnstampedIsDevel", func(t *testing.T) {
		t.Parallel()
		for _, bi := range []*debug.BuildInfo{nil, {GoVersion: runtime.Version(), Main: debug.Module{Version: "(devel)"}}} {
			v := readVersion(bi)
			require.Equal(t, "devel", v.Version)
			require.Empty(t, v.Commit)
			require.Equal(t, runtime.Version(), v.GoVersion)
		}
	})

	t.Run("PrintsThisBinarysBuildInfoAsJSON", func(t *testing.T) {
		t.Parallel()
		var out, errOut bytes.Buffer
		require.NoError(t, run(t.Context(), []string{"version", "--json"}, func(string) string { return "" }, &out, &errOut), errOut.String())
		var v map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &v))
		require.ElementsMatch(t, []string{"version", "commit", "commit_time", "modified", "go", "platform", "cgo"}, slices.Collect(maps.Keys(v)))
		require.Equal(t, runtime.Version(), v["go"], "the test binary's own build info")
		require.Equal(t, runtime.GOOS+"/"+runtime.GOARCH, v["platform"])
		require.NotEmpty(t, v["version"])
		if c := v["commit"].(string); c != "" {
			require.Regexp(t, `^[0-9a-f]{40}$`, c)
			_, err := time.Parse(time.RFC3339, v["commit_time"].(string))
			require.NoError(t, err)
		}
	})

	t.Run("PrintsText", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		require.NoError(t, run(t.Context(), []string{"version"}, func(string) string { return "" }, &out, &out))
		require.Regexp(t, `^flightdeck \S+\ncommit .+\n`+runtime.Version()+` `+runtime.GOOS+`/`+runtime.GOARCH+`, cgo (on|off)\n$`, out.String())
	})

	t.Run("RefusesArguments", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		err := run(t.Context(), []string{"version", "extra"}, func(string) string { return "" }, &out, &out)
		require.ErrorIs(t, err, errUsage)
	})
}
