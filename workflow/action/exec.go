package action

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"flightdeck/internal/tracing"
)

// ExecInputs are the with fields the action takes (the loader refuses others).
var ExecInputs = []string{"command", "env", "dir"}

// Exec runs a command: argv only, never through a shell, in its own process
// group so a timeout or cancel kills everything it started.
type Exec struct {
	// BaseEnv is the server's environment (default os.Environ); the command
	// inherits it less flightdeck's own secrets (stepEnv).
	BaseEnv func() []string
	// KillGrace is how long the group gets between SIGTERM and SIGKILL
	// (default 2s).
	KillGrace time.Duration
}

// maxLogLine cuts very long output lines in step.log events (the artifact
// keeps them whole).
const maxLogLine = 4096

// Run implements Action.
func (e Exec) Run(ctx context.Context, in Input) (json.RawMessage, error) {
	argv, err := stringList(in.With["command"])
	if err != nil || len(argv) == 0 {
		return nil, &Permanent{Err: errors.New("exec: with.command must be a non-empty list of strings (argv; no shell)")}
	}
	envMap, err := stringMap(in.With["env"])
	if err != nil {
		return nil, &Permanent{Err: fmt.Errorf("exec: with.env: %w", err)}
	}
	dir := in.Dir
	if d, ok := in.With["dir"]; ok {
		ds, ok := d.(string)
		if !ok {
			return nil, &Permanent{Err: errors.New("exec: with.dir must be a string")}
		}
		if filepath.IsAbs(ds) || in.Dir == "" {
			dir = ds
		} else {
			dir = filepath.Join(in.Dir, ds)
		}
	}
	prog := argv[0]
	switch {
	case filepath.IsAbs(prog):
	case strings.Contains(prog, "/"):
		prog = filepath.Join(dir, prog)
	default:
		if prog, err = exec.LookPath(prog); err != nil {
			return nil, &Permanent{Err: fmt.Errorf("exec: %s not found in PATH", argv[0])}
		}
	}

	baseEnv := os.Environ
	if e.BaseEnv != nil {
		baseEnv = e.BaseEnv
	}
	env := append(stepEnv(baseEnv()),
		"FLIGHTDECK_TASK_ID="+in.TaskID,
		"FLIGHTDECK_STEP="+in.Step,
		fmt.Sprintf("FLIGHTDECK_STEP_INDEX=%d", in.StepIndex),
		fmt.Sprintf("FLIGHTDECK_ATTEMPT=%d", in.Attempt),
		"FLIGHTDECK_IDEMPOTENCY_KEY="+in.IdempotencyKey,
	)
	names := make([]string, 0, len(in.Params))
	for k := range in.Params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, "FLIGHTDECK_PARAM_"+strings.ToUpper(k)+"="+paramString(in.Params[k]))
	}
	for k, v := range envMap {
		env = append(env, k+"="+v)
	}
	if in.Compensating {
		env = append(env, "FLIGHTDECK_COMPENSATING=1")
	}
	if tp := tracing.Traceparent(ctx); tp != "" {
		env = append(env, "TRACEPARENT="+tp) // the step span's (contract §8)
	}

	cmd := exec.Command(prog, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pw.Close()
		return nil, &Permanent{Err: fmt.Errorf("exec: %w", err)}
	}
	tail := newTail(5)
	var copied sync.WaitGroup
	copied.Go(func() { streamLines(pr, in, tail) })

	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-ctx.Done():
		killGroup(cmd.Process.Pid, e.KillGrace, done)
		waitErr = ctx.Err()
	}
	copied.Wait()
	out, _ := json.Marshal(map[string]any{"exit_code": cmd.ProcessState.ExitCode(), "duration_ms": time.Since(start).Milliseconds()})
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("killed: %w", ctx.Err())
		}
		return nil, fmt.Errorf("cancelled; process group killed")
	}
	if waitErr != nil {
		return nil, fmt.Errorf("%v; last output: %s", waitErr, tail.String())
	}
	return out, nil
}

// stepEnv is the server's environment less flightdeck's own secrets
// (contract section 6): DATABASE_URL, OPENAI_API_KEY, every FLIGHTDECK_*
// variable (the step's own FLIGHTDECK_* variables are added afresh) and
// every variable FLIGHTDECK_SECRET_ENV names. A step and whatever it starts
// (a deploy script, a deployed app) never get the keys to flightdeck's
// database or model account.
func stepEnv(server []string) []string {
	secret := map[string]bool{"DATABASE_URL": true, "OPENAI_API_KEY": true}
	for _, kv := range server {
		if names, ok := strings.CutPrefix(kv, "FLIGHTDECK_SECRET_ENV="); ok {
			for _, n := range strings.Split(names, ",") {
				if n = strings.TrimSpace(n); n != "" {
					secret[n] = true
				}
			}
		}
	}
	out := make([]string, 0, len(server))
	for _, kv := range server {
		name, _, _ := strings.Cut(kv, "=")
		if secret[name] || strings.HasPrefix(name, "FLIGHTDECK_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// killGroup sends SIGTERM to the process group, then SIGKILL after grace if
// it has not exited; it waits for the exit.
func killGroup(pid int, grace time.Duration, done <-chan error) {
	if grace <= 0 {
		grace = 2 * time.Second
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-done:
		_ = syscall.Kill(-pid, syscall.SIGKILL) // stragglers in the group
	case <-time.After(grace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-done
	}
}

// streamLines copies output to in.Output whole and to in.Log line by line.
func streamLines(r io.Reader, in Input, tail *tailLines) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			_, _ = io.WriteString(in.Output, line)
			l := strings.TrimRight(line, "\r\n")
			if len(l) > maxLogLine {
				l = l[:maxLogLine] + " […line cut; see the log artifact]"
			}
			tail.add(l)
			in.Log(l)
		}
		if err != nil {
			return
		}
	}
}

type tailLines struct {
	mu    sync.Mutex
	n     int
	lines []string
}

func newTail(n int) *tailLines { return &tailLines{n: n} }

func (t *tailLines) add(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, s)
	if len(t.lines) > t.n {
		t.lines = t.lines[1:]
	}
}

func (t *tailLines) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return "(none)"
	}
	return strings.Join(t.lines, " | ")
}

func stringList(v any) ([]string, error) {
	switch x := v.(type) {
	case []string:
		return x, nil
	case []any:
		out := make([]string, len(x))
		for i, it := range x {
			s, ok := it.(string)
			if !ok {
				return nil, fmt.Errorf("item %d is not a string", i)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, errors.New("not a list")
}

func stringMap(v any) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("must be a map of strings")
	}
	out := make(map[string]string, len(m))
	for k, val := range m {
		s, ok := val.(string)
		if !ok {
			return nil, fmt.Errorf("%s must be a string", k)
		}
		out[k] = s
	}
	return out, nil
}

func paramString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []string:
		return strings.Join(x, ",")
	case []any:
		parts := make([]string, len(x))
		for i, it := range x {
			parts[i] = fmt.Sprint(it)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}
