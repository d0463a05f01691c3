package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/dbtest"
)

// readmeSkip marks a README code block the test does not run; the comment
// says why (it serves this checkout itself, or needs a production
// database), e.g. <!-- not run by the README test: it needs your own
// PostgreSQL server -->, on the line before the fence.
const readmeSkip = "<!-- not run by the README test"

// shBlock is one ```sh block of the README: its first line number and
// text.
type shBlock struct {
	line int
	text string
}

// readmeBlocks extracts the README's ```sh blocks, leaving out the ones
// marked readmeSkip.
func readmeBlocks(t *testing.T, readme string) (run []shBlock, skipped int) {
	t.Helper()
	var cur *shBlock
	prev := ""
	for i, l := range strings.Split(readme, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(l, "```sh"):
			if strings.HasPrefix(prev, readmeSkip) {
				skipped++
				cur = &shBlock{line: -1}
			} else {
				cur = &shBlock{line: i + 2}
			}
		case cur != nil && strings.HasPrefix(l, "```"):
			if cur.line > 0 {
				run = append(run, *cur)
			}
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
		if strings.TrimSpace(l) != "" {
			prev = l
		}
	}
	require.Nil(t, cur, "an unclosed code block")
	return run, skipped
}

// expectation is what a curl line of the README says it answers: the
// statuses its comment names ("# 422 params.version", "# 202 …, or 409
// not_promoted") and a word of each the body must hold; no status named
// means success (2xx).
type expectation struct {
	line     string
	statuses []int
	words    []string
}

var (
	statusInComment = regexp.MustCompile(`\b([1-5][0-9][0-9])\b(?: ([a-z][a-z_.]*[a-z_]))?`)
	statusMarker    = regexp.MustCompile(`(?m)^@@README-STATUS ([0-9]{3})$`)
)

func expectations(block string) []expectation {
	var out []expectation
	for _, l := range strings.Split(block, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "curl ") {
			continue
		}
		e := expectation{line: l}
		if _, comment, ok := strings.Cut(l, "   #"); ok {
			for _, m := range statusInComment.FindAllStringSubmatch(comment, -1) {
				n, _ := strconv.Atoi(m[1])
				e.statuses = append(e.statuses, n)
				if m[2] != "" && strings.ContainsAny(m[2], "_.") { // a code or field, not prose
					e.words = append(e.words, m[2])
				}
			}
		}
		out = append(out, e)
	}
	return out
}

// TestREADMEExamples runs every shell example of the README (but the
// marked ones) with bash against a real flightdeck serve with the demo
// data, so they can never rot: each curl must answer the status its
// comment shows, and 2xx where it shows none. bin/flightdeck in the
// examples is this test binary acting as the CLI; the examples'
// 127.0.0.1:8080 is the test's server.
func TestREADMEExamples(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	realCurl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	blocks, skipped := readmeBlocks(t, string(readme))
	require.GreaterOrEqual(t, len(blocks), 2, "the README's runnable examples")
	require.GreaterOrEqual(t, skipped, 1)

	dbURL := dbtest.URL(t)
	dataDir := t.TempDir()
	env := map[string]string{"DATABASE_URL": dbURL, "FLIGHTDECK_DEV": "1", "FLIGHTDECK_DATA_DIR": dataDir,
		"FLIGHTDECK_LOCAL_HEALTH_TIMEOUT": "60s", // a loaded test machine starts demo apps slowly
		"FLIGHTDECK_LOCAL_STOP_ON_EXIT":   "1"}   // the examples' demo apps stop with the server
	ctx, cancel := context.WithCancel(context.Background())
	logs := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, logs, logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop")
		}
	})
	addr := ""
	serving := regexp.MustCompile(`msg=Serving addr=(127\.0\.0\.1:[0-9]+)`)
	require.Eventually(t, func() bool {
		if m := serving.FindStringSubmatch(logs.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	}, 60*time.Second, 20*time.Millisecond, "serve did not start: %s", logs)

	// bin/flightdeck is this binary as the CLI; curl reports each status
	// on a line of its own after the body.
	dir := t.TempDir()
	self, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "shim"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "flightdeck"),
		fmt.Appendf(nil, "#!/bin/sh\nFLIGHTDECK_AS_CLI=1 exec %q \"$@\"\n", self), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shim", "curl"),
		fmt.Appendf(nil, "#!/bin/sh\nexec %q --write-out '\\n@@README-STATUS %%{http_code}\\n' \"$@\"\n", realCurl), 0o755))

	token := func(email string) string {
		var out, errOut bytes.Buffer
		require.NoError(t, run(t.Context(), []string{"token", "create", "--email", email, "--name", "readme"},
			func(k string) string { return env[k] }, &out, &errOut), errOut.String())
		return strings.TrimSpace(out.String())
	}
	scriptEnv := append(os.Environ(), "PATH="+filepath.Join(dir, "shim")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"DATABASE_URL="+dbURL, "FLIGHTDECK_DATA_DIR="+dataDir,
		"T="+token("dev@demo.local"), "ADMIN="+token("admin@demo.local"))

	for _, b := range blocks {
		t.Run(fmt.Sprintf("line%d", b.line), func(t *testing.T) {
			script := "set -e\n" + strings.ReplaceAll(b.text, "127.0.0.1:8080", addr)
			cmd := exec.CommandContext(t.Context(), bash, "-c", script)
			cmd.Dir, cmd.Env = dir, scriptEnv
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Run(), "README line %d:\n%s\n%s", b.line, b.text, out.String())
			want := expectations(b.text)
			got := statusMarker.FindAllStringSubmatchIndex(out.String(), -1)
			require.Len(t, got, len(want), "one status per curl:\n%s", out.String())
			start := 0
			for i, e := range want {
				body := out.String()[start:got[i][0]]
				status, _ := strconv.Atoi(out.String()[got[i][2]:got[i][3]])
				start = got[i][1]
				if len(e.statuses) == 0 {
					require.True(t, status >= 200 && status < 300, "%s\nanswered %d: %s", e.line, status, body)
					continue
				}
				require.Contains(t, e.statuses, status, "%s\nanswered %d: %s", e.line, status, body)
				if status >= 400 { // a refusal people read: no Go duration, no RFC 3339, no regex
					_, msg, _ := strings.Cut(body, `{"error"`)
					require.NotRegexp(t, `[0-9]+m[0-9]+s|[0-9]T[0-9]{2}:[0-9]{2}|\^|\$"`, msg, e.line)
				}
				if i := slices.Index(e.statuses, status); i < len(e.words) && len(e.words) == len(e.statuses) {
					require.Contains(t, body, e.words[i], "%s\nanswered %d", e.line, status)
				}
				if strings.Contains(e.line, "format=csv") {
					first, _, _ := strings.Cut(strings.TrimSpace(body), "\n")
					require.Equal(t, "id,at,actor,type,task_id,detail", first)
					require.Regexp(t, `\n[0-9]+,[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z,`, body, "RFC 3339 times")
				}
			}
		})
	}
}

// TestREADMEExtractor: the extractor sees the blocks, skips the marked
// one and reads the statuses of the comments.
func TestREADMEExtractor(t *testing.T) {
	t.Parallel()
	blocks, skipped := readmeBlocks(t, "x\n\n"+readmeSkip+": why -->\n```sh\ngo tool task run\n```\n```sh\necho hi\ncurl -s a   # 202 awaiting_approval (2 reviewers), or 409 not_promoted\ncurl b\n```\n")
	require.Equal(t, 1, skipped)
	require.Equal(t, []shBlock{{line: 8, text: "echo hi\ncurl -s a   # 202 awaiting_approval (2 reviewers), or 409 not_promoted\ncurl b\n"}}, blocks)
	e := expectations(blocks[0].text)
	require.Len(t, e, 2)
	require.Equal(t, []int{202, 409}, e[0].statuses)
	require.Equal(t, []string{"awaiting_approval", "not_promoted"}, e[0].words)
	require.Empty(t, e[1].statuses)
}

// lockedBuffer is a bytes.Buffer the server's logger and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
