package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is a demo-app process this provider started and reaps.
type child struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process exited and was reaped
}

// spawn starts a demo app for instance id and returns its pid and port. It
// runs in its own process group (a signal to flightdeck's group does not
// reach it, and stop can kill the group), and is not tied to ctx: it
// outlives the step that started it.
func (p *Provider) spawn(ctx context.Context, id, version string) (pid, port int, err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	cmd := exec.Command(p.exe, "demoapp", "--version", version, "--addr", "127.0.0.1:0", "--instance", id)
	cmd.Stdout = w
	cmd.Env = childEnv(os.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return 0, 0, fmt.Errorf("error starting the demo app: %w", err)
	}
	w.Close() // the child holds the write end now
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.done) }()
	p.mu.Lock()
	p.procs[cmd.Process.Pid] = c
	p.mu.Unlock()

	// The demo app listens on port 0 and says which port it got: no race
	// for a "free" port between choosing and binding it.
	type line struct {
		s   string
		err error
	}
	lines := make(chan line, 1)
	go func() {
		s, err := bufio.NewReader(r).ReadString('\n')
		lines <- line{s, err}
	}()
	timeout := time.NewTimer(p.cfg.HealthTimeout)
	defer timeout.Stop()
	var l line
	select {
	case l = <-lines:
	case <-ctx.Done():
		l.err = ctx.Err()
	case <-timeout.C:
		l.err = errors.New("the demo app did not say its address in time")
	}
	if l.err == nil {
		port, l.err = parseListening(l.s)
	}
	if l.err != nil {
		p.stop(cmd.Process.Pid, id)
		return 0, 0, fmt.Errorf("demo app %s: %w", version, l.err)
	}
	return cmd.Process.Pid, port, nil
}

// childEnv keeps only what a demo app needs from the server's environment:
// the server's (DATABASE_URL, API keys, secrets) must not leak into an app.
func childEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "GORACE", "GOCOVERDIR":
			out = append(out, kv)
		}
	}
	return out
}

// instancePIDs finds the live demo-app processes of instance id on this
// host by their command line: a crash between starting a process and
// recording its pid leaves one that only this can find.
func instancePIDs(id string) []int {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if ours(pid, id) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// parseListening reads the demo app's "listening on 127.0.0.1:PORT" line.
func parseListening(s string) (int, error) {
	addr, ok := strings.CutPrefix(strings.TrimSpace(s), "listening on ")
	if !ok {
		return 0, fmt.Errorf("unexpected first line %q", s)
	}
	_, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port <= 0 || port > 65535 {
		return 0, fmt.Errorf("bad port in %q", s)
	}
	return port, nil
}

// waitHealthy polls /healthz until it answers 200. It fails after
// HealthFailures answers in a row that are not 200 (a served error is a
// verdict; a refused connection is not yet one), when the process exits,
// or after HealthTimeout.
func (p *Provider) waitHealthy(ctx context.Context, pid, port int) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.HealthTimeout)
	defer cancel()
	p.mu.Lock()
	c := p.procs[pid]
	p.mu.Unlock()
	var exited <-chan struct{}
	if c != nil {
		exited = c.done
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	failures := 0
	last := "no answer"
	for {
		code, body, err := probe(ctx, port)
		switch {
		case err == nil && code == http.StatusOK:
			return nil
		case err == nil:
			failures++
			last = fmt.Sprintf("/healthz answered %d %s", code, body)
			if failures >= p.cfg.HealthFailures {
				return fmt.Errorf("health check failed: %s", last)
			}
		default:
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("health check failed after %s: %s", p.cfg.HealthTimeout, last)
		case <-exited:
			return fmt.Errorf("health check failed: the process exited (%s)", last)
		case <-tick.C:
		}
	}
}

// probeClient never follows redirects or keeps connections to instances
// that come and go.
var probeClient = &http.Client{
	Transport:     &http.Transport{DisableKeepAlives: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// probe GETs /healthz of the instance on port.
func probe(ctx context.Context, port int) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/healthz", port), nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}

// ours reports whether pid is alive and is the demo app of instance id (its
// command line says so): after a restart of flightdeck, or with the pid
// reused by another program, a bare pid proves nothing.
func ours(pid int, id string) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
	if len(args) < 2 || string(args[1]) != "demoapp" {
		return false
	}
	for i := 2; i+1 < len(args); i++ {
		if string(args[i]) == "--instance" && string(args[i+1]) == id {
			return !zombie(pid)
		}
	}
	return false
}

// zombie reports whether pid has exited but is not reaped yet.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// Format: pid (comm) state …; comm may hold spaces and parens.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

// stop ends instance id's process pid: SIGTERM to its group, SIGKILL after
// StopTimeout. A pid that is not (or no longer) that instance's demo app is
// left alone. It returns once the process is gone.
func (p *Provider) stop(pid int, id string) {
	p.mu.Lock()
	c := p.procs[pid]
	p.mu.Unlock()
	if c == nil && !ours(pid, id) {
		return
	}
	gone := func() bool {
		if c != nil {
			select {
			case <-c.done:
				return true
			default:
				return false
			}
		}
		return !ours(pid, id)
	}
	wait := func(d time.Duration) bool {
		deadline := time.NewTimer(d)
		defer deadline.Stop()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for !gone() {
			var done <-chan struct{}
			if c != nil {
				done = c.done
			}
			select {
			case <-done:
			case <-tick.C:
			case <-deadline.C:
				return gone()
			}
		}
		return true
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	if !wait(p.cfg.StopTimeout) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		wait(p.cfg.StopTimeout)
	}
	if c != nil {
		p.mu.Lock()
		delete(p.procs, pid)
		p.mu.Unlock()
	}
}

// StopAll stops every process this provider started (tests; a server
// leaves its instances running on purpose, to be adopted on restart).
func (p *Provider) StopAll() {
	p.mu.Lock()
	pids := make([]int, 0, len(p.procs))
	for pid := range p.procs {
		pids = append(pids, pid)
	}
	p.mu.Unlock()
	for _, pid := range pids {
		p.stop(pid, "")
	}
}
