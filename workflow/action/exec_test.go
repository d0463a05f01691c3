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

// script writes a shell script into dir. The tests run it as "sh ./name",
// not "./name": executing a file just written fails now and then with
// "text file busy" while a parallel test forks (the child holds the
// writer's descriptor until its exec; golang/go#22315).
func script(t *testing.T, dir, name, body string) string {
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return p
}

func TestExecEnvAndOutput(t *testing.T) {
	t.Parallel()
	in, sink, out := input(t, nil)
	script(t, in.Dir, "show.sh", `echo "key=$FLIGHTDECK_IDEMPOTENCY_KEY step=$FLIGHTDECK_STEP idx=$FLIGHTDECK_STEP_INDEX app=$FLIGHTDECK_PARAM_APP regions=$FLIGHTDECK_PARAM_REGIONS target=$TARGET comp=$FLIGHTDECK_COMPENSATING"; echo second line 1>&2`)
	in.With = map[string]any{"command": []any{"sh", "./show.sh", "; rm -rf /"}, "env": map[string]any{"TARGET": "staging"}}
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

// TestExecKeepsFlightdecksSecrets: a step gets the server's environment
// less flightdeck's own secrets (contract section 6), and the contract's
// FLIGHTDECK_* variables are the step's, not inherited ones.
func TestExecKeepsFlightdecksSecrets(t *testing.T) {
	t.Parallel()
	in, _, out := input(t, map[string]any{"command": []any{"env"}, "env": map[string]any{"TARGET": "staging"}})
	server := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=/home/deploy", "LANG=C.UTF-8",
		"DATABASE_URL=postgres://postgres:db-password@127.0.0.1:5432/flightdeck",
		"OPENAI_API_KEY=sk-openai-key", "OPENAI_BASE_URL=http://127.0.0.1:11434/v1",
		"FLIGHTDECK_DEV_PASSWORD=dev-password", "FLIGHTDECK_TOKEN=fd_cli-token", "FLIGHTDECK_ANYTHING=x",
		"FLIGHTDECK_SECRET_ENV=VAULT_TOKEN, AWS_SECRET_ACCESS_KEY", "VAULT_TOKEN=vault-token", "AWS_SECRET_ACCESS_KEY=aws-key",
		"FLIGHTDECK_TASK_ID=spoofed", "FLIGHTDECK_COMPENSATING=1",
	}
	_, err := Exec{BaseEnv: func() []string { return server }}.Run(t.Context(), in)
	require.NoError(t, err)
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	for _, secret := range []string{"db-password", "sk-openai-key", "dev-password", "fd_cli-token", "vault-token", "aws-key", "spoofed"} {
		require.NotContains(t, out.String(), secret)
	}
	for _, name := range []string{"DATABASE_URL", "OPENAI_API_KEY", "FLIGHTDECK_DEV_PASSWORD", "FLIGHTDECK_TOKEN", "FLIGHTDECK_ANYTHING",
		"FLIGHTDECK_SECRET_ENV", "VAULT_TOKEN", "AWS_SECRET_ACCESS_KEY", "FLIGHTDECK_COMPENSATING"} {
		require.NotContains(t, env, name)
	}
	require.Equal(t, "/home/deploy", env["HOME"])
	require.Equal(t, "http://127.0.0.1:11434/v1", env["OPENAI_BASE_URL"], "not a secret")
	require.Equal(t, "t1", env["FLIGHTDECK_TASK_ID"])
	require.Equal(t, "smoke", env["FLIGHTDECK_STEP"])
	require.Equal(t, "2", env["FLIGHTDECK_STEP_INDEX"])
	require.Equal(t, "1", env["FLIGHTDECK_ATTEMPT"])
	require.Equal(t, "key-1", env["FLIGHTDECK_IDEMPOTENCY_KEY"])
	require.Equal(t, "shop", env["FLIGHTDECK_PARAM_APP"])
	require.Equal(t, "staging", env["TARGET"])
}

func TestExecPathLookupAndFailure(t *testing.T) {
	t.Parallel()
	in, sink, _ := input(t, map[string]any{"command": []any{"echo", "hello $HOME"}})
	_, err := Exec{}.Run(t.Context(), in)
	require.NoError(t, err)
	require.Equal(t, []string{"hello $HOME"}, sink.lines, "arguments are never shell-expanded")

	in, _, _ = input(t, nil)
	script(t, in.Dir, "fail.sh", "echo about to fail\nexit 3\n")
	in.With = map[string]any{"command": []any{"sh", "./fail.sh"}}
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
	in.With = map[string]any{"command": []any{"sh", "./hang.sh"}}
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
