package action

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) log(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }

func input(t *testing.T, with map[string]any) (Input, *logSink, *bytes.Buffer) {
	sink := &logSink{}
	out := &bytes.Buffer{}
	return Input{TaskID: "t1", Step: "smoke", StepIndex: 2, Attempt: 1, IdempotencyKey: "key-1",
		Params: map[string]any{"app": "shop", "regions": []string{"eu", "us"}}, Dir: t.TempDir(),
		With: with, Log: sink.log, Output: out}, sink, out
}

func script(t *testing.T, dir, name, body string) string {
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return p
}

func TestExecEnvAndOutput(t *testing.T) {
	t.Parallel()
	in, sink, out := input(t, nil)
	script(t, in.Dir, "show.sh", `echo "key=$FLIGHTDECK_IDEMPOTENCY_KEY step=$FLIGHTDECK_STEP idx=$FLIGHTDECK_STEP_INDEX app=$FLIGHTDECK_PARAM_APP regions=$FLIGHTDECK_PARAM_REGIONS target=$TARGET comp=$FLIGHTDECK_COMPENSATING"; echo second line 1>&2`)
	in.With = map[string]any{"command": []any{"./show.sh", "; rm -rf /"}, "env": map[string]any{"TARGET": "staging"}}
	res, err := Exec{}.Run(t.Context(), in)
	require.NoError(t, err)
	require.Contains(t, string(res), `"exit_code":0`)
	require.Equal(t, []string{"key=key-1 step=smoke idx=2 app=shop regions=eu,us target=staging comp=", "second line"}, sink.lines)
	require.Contains(t, out.String(), "second line\n")

	in.Compensating = true
	sink.lines = nil
	_, err = Exec{}.Run(t.Context(), in)
	require.NoError(t, err)
	require.Contains(t, sink.lines[0], "comp=1")
}

func TestExecPathLookupAndFailure(t *testing.T) {
	t.Parallel()
	in, sink, _ := input(t, map[string]any{"command": []any{"echo", "hello $HOME"}})
	_, err := Exec{}.Run(t.Context(), in)
	require.NoError(t, err)
	require.Equal(t, []string{"hello $HOME"}, sink.lines, "arguments are never shell-expanded")

	in, _, _ = input(t, nil)
	script(t, in.Dir, "fail.sh", "echo about to fail\nexit 3\n")
	in.With = map[string]any{"command": []any{"./fail.sh"}}
	_, err = Exec{}.Run(t.Context(), in)
	require.ErrorContains(t, err, "exit status 3")
	require.ErrorContains(t, err, "about to fail")
}

func TestExecBadWithIsPermanent(t *testing.T) {
	t.Parallel()
	for _, with := range []map[string]any{nil, {"command": "echo hi"}, {"command": []any{}}, {"command": []any{1}}, {"command": []any{"echo"}, "env": "x"}, {"command": []any{"no-such-program-xyz"}}} {
		in, _, _ := input(t, with)
		_, err := Exec{}.Run(t.Context(), in)
		var perm *Permanent
		require.True(t, errors.As(err, &perm), "%v: %v", with, err)
	}
}

func TestExecTimeoutKillsTheGroup(t *testing.T) {
	t.Parallel()
	in, _, _ := input(t, nil)
	pidFile := filepath.Join(in.Dir, "child.pid")
	script(t, in.Dir, "hang.sh", "sleep 1000 &\necho $! > "+pidFile+"\necho started\nwait\n")
	in.With = map[string]any{"command": []any{"./hang.sh"}}
	started := make(chan struct{})
	var once sync.Once
	in.Log = func(s string) {
		if s == "started" {
			once.Do(func() { close(started) })
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	_, err := Exec{KillGrace: 500 * time.Millisecond}.Run(ctx, in)
	require.ErrorContains(t, err, "cancelled")
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 10*time.Second, 20*time.Millisecond, "the grandchild is gone too")
}
