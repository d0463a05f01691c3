package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flightdeck/handlers"
	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/notify"
	"flightdeck/store"
	"flightdeck/workflow/action/local"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

// canaryPipelines are the canary tests' pipelines: the built-in's shape
// with short intervals, and a hold step (an exec that waits for the file
// named by param hold) so a test can look at the split while it stands.
const canaryPipelines = `name: canary-fast
params:
  - {name: app, type: string, required: true}
  - {name: version, type: string, required: true}
  - {name: env, type: enum, values: [staging], default: staging}
  - {name: hold, type: string, default: ""}
  - {name: weight, type: int, default: 50}
  - {name: success, type: string, default: "<= 0.05"}
  # 1s at 40 requests a second is ~20 canary requests a window against a
  # minimum of 3: at 400ms a loaded test machine's load generator fell
  # behind and a window had 2 (TestCanaryHealthy failed on a fresh clone)
  - {name: interval, type: string, default: 1s}
steps:
  - name: create_dns
    action: local.dns_create
    compensate: {action: local.dns_delete}
  - name: deploy_canary
    action: local.instance_start
    with: {version: "{{ .params.version }}", weight: 0}
    compensate: {action: local.instance_stop}
  - name: shift
    action: local.traffic_shift
    with: {host: "{{ .params.app }}.{{ .params.env }}", weight: "{{ .params.weight }}"}
    compensate: {action: local.traffic_shift}
  - name: hold
    action: exec
    with:
      command: [sh, -c, 'while [ -n "$HOLD" ] && [ ! -e "$HOLD" ]; do sleep 0.05; done']
      env: {HOLD: "{{ .params.hold }}"}
  - name: analyse
    action: analysis
    with:
      provider: proxy
      host: "{{ .params.app }}.{{ .params.env }}"
      metric: error_rate
      success: "{{ .params.success }}"
      interval: "{{ .params.interval }}"
      count: 3
      min_requests: 3
      load: {rate: 40, path: /}
  - name: promote
    action: local.traffic_shift
    with: {host: "{{ .params.app }}.{{ .params.env }}", weight: 100}
    compensate: {action: local.traffic_shift}
`

const canaryPromPipeline = `name: canary-prom
params:
  - {name: app, type: string, required: true}
  - {name: version, type: string, required: true}
  - {name: env, type: enum, values: [staging], default: staging}
  - {name: hold, type: string, default: ""}
  - {name: prom_url, type: string, required: true}
  - {name: query, type: string, required: true}
  - {name: success, type: string, required: true}
steps:
  - name: create_dns
    action: local.dns_create
    compensate: {action: local.dns_delete}
  - name: deploy_canary
    action: local.instance_start
    with: {version: "{{ .params.version }}", weight: 0}
    compensate: {action: local.instance_stop}
  - name: shift
    action: local.traffic_shift
    with: {host: "{{ .params.app }}.{{ .params.env }}", weight: 50}
    compensate: {action: local.traffic_shift}
  - name: hold
    action: exec
    with:
      command: [sh, -c, 'while [ -n "$HOLD" ] && [ ! -e "$HOLD" ]; do sleep 0.05; done']
      env: {HOLD: "{{ .params.hold }}"}
  - name: analyse
    action: analysis
    with:
      provider: prometheus
      url: "{{ .params.prom_url }}"
      query: "{{ .params.query }}"
      success: "{{ .params.success }}"
      interval: 1s
      count: 3
  - name: promote
    action: local.traffic_shift
    with: {host: "{{ .params.app }}.{{ .params.env }}", weight: 100}
    compensate: {action: local.traffic_shift}
`

// canaryEnv is one flightdeck (API, proxy, worker pool, local provider)
// in this process, on its own database.
type canaryEnv struct {
	t      *testing.T
	st     *store.Store
	url    string // the server's base URL (API, proxy, /metrics)
	getenv func(string) string
	dir    string
	lp     *local.Provider
}

func newCanaryEnv(t *testing.T) *canaryEnv {
	t.Helper()
	st := dbtest.Store(t)
	ctx := t.Context()
	_, err := st.UserAdd(ctx, store.UserAddParams{Email: "dev@acme.test", Team: "acme", Role: auth.RoleDeployer})
	require.NoError(t, err)
	token, hash := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, st.TokenCreate(ctx, "dev@acme.test", "cli", hash))
	dir := t.TempDir()
	for name, src := range map[string]string{"fast.yaml": canaryPipelines, "prom.yaml": canaryPromPipeline} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600))
	}
	cfg, err := config.Load(func(string) string { return "" })
	require.NoError(t, err)
	cfg.PipelinesDir = dir
	catalog, err := loadCatalog(cfg)
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	lp, err := local.New(local.Config{Store: st, Logger: logger, Node: "test-node", Executable: os.Args[0], HealthTimeout: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(lp.StopAll)
	n := notify.NewListener(st, logger)
	hub := notify.NewHub()
	hub.Attach(n)
	t.Cleanup(hub.Follow(st.Wakeups()))
	pool := queue.New(st, taskHandlers(cfg, st, catalog, logger, lp), queue.Config{Workers: 2, PollInterval: 20 * time.Millisecond, Logger: logger})
	pool.Attach(n)
	srv := httptest.NewServer(handlers.New(handlers.Deps{Config: cfg, Store: st, Logger: logger, Pipelines: catalog, Hub: hub}))
	lp.SetProxyURL(srv.URL)
	bg, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(bg) })
	wg.Go(func() { _ = pool.Run(bg) })
	t.Cleanup(func() { srv.Close(); cancel(); wg.Wait() })
	return &canaryEnv{t: t, st: st, url: srv.URL, dir: t.TempDir(), lp: lp, getenv: func(k string) string {
		return map[string]string{"FLIGHTDECK_URL": srv.URL, "FLIGHTDECK_TOKEN": token}[k]
	}}
}

// submit runs "flightdeck submit --watch" and returns the task id and
// whether it completed.
func (e *canaryEnv) submit(pipelineName string, params ...string) (string, string, error) {
	args := []string{"submit", "--pipeline", pipelineName, "--watch"}
	for _, p := range params {
		args = append(args, "--param", p)
	}
	var out, errOut bytes.Buffer
	err := run(e.t.Context(), args, e.getenv, &out, &errOut)
	return strings.SplitN(out.String(), "\n", 2)[0], out.String() + errOut.String(), err
}

// versions sends n requests for host through the proxy and counts the
// versions that answered (by the demo app's header).
func versions(t require.TestingT, base, host string, n int) map[string]int {
	seen := map[string]int{}
	for range n {
		req, err := http.NewRequest(http.MethodGet, base+"/", nil)
		require.NoError(t, err)
		req.Host = host + ".localhost"
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		seen[resp.Header.Get("X-Demoapp-Version")]++
	}
	return seen
}

// serves waits until every one of 50 requests reaches version alone (a
// serve process trusts a route lookup for a couple of seconds).
func serves(t *testing.T, base, host, version string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, map[string]int{version: 50}, versions(c, base, host, 50))
	}, 20*time.Second, 100*time.Millisecond)
}

// waitStep waits until a task deploying host's app has step in state.
func (e *canaryEnv) waitStep(host, step string, state task.StepState) string {
	var id string
	require.Eventually(e.t, func() bool {
		var n int
		err := e.st.Pool().QueryRow(e.t.Context(), `SELECT count(*) FROM local_routes WHERE host = $1`, host).Scan(&n)
		return err == nil && n == 1
	}, 30*time.Second, 20*time.Millisecond)
	require.Eventually(e.t, func() bool {
		err := e.st.Pool().QueryRow(e.t.Context(), `SELECT s.task_id FROM task_steps s JOIN tasks t ON t.id = s.task_id
			WHERE s.name = $1 AND s.state = $2 AND t.params->>'app' = $3`, step, string(state), strings.SplitN(host, ".", 2)[0]).Scan(&id)
		return err == nil
	}, 60*time.Second, 20*time.Millisecond)
	return id
}

func stepStates(t *testing.T, st *store.Store, id string) map[string]string {
	rows, err := st.StepList(t.Context(), id)
	require.NoError(t, err)
	out := map[string]string{}
	for _, r := range rows {
		out[r.Name] = string(r.State)
	}
	return out
}

// TestCanaryHealthy: a healthy canary holds its share while it stands
// (over 400 requests a 50 % share lands within 35–65 %), passes its
// analysis and, promoted, serves every request.
func TestCanaryHealthy(t *testing.T) {
	t.Parallel()
	e := newCanaryEnv(t)
	_, out, err := e.submit("web-service", "app=shop", "version=1.0.0")
	require.NoError(t, err, out)
	serves(t, e.url, "shop.staging", "1.0.0")
	stable, err := e.st.LocalRouteGet(t.Context(), "shop.staging")
	require.NoError(t, err)

	hold := filepath.Join(e.dir, "release")
	done := make(chan error, 1)
	var canaryOut string
	go func() {
		var err error
		_, canaryOut, err = e.submit("canary-fast", "app=shop", "version=2.0.0", "hold="+hold)
		done <- err
	}()
	e.waitStep("shop.staging", "hold", task.StepRunning)
	route, err := e.st.LocalRouteGet(t.Context(), "shop.staging")
	require.NoError(t, err)
	require.NotEmpty(t, route.CanaryID)
	require.Equal(t, 50, route.CanaryWeight)
	n, err := e.lp.StopReplaced(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "nothing is replaced while the canary stands")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		seen := versions(c, e.url, "shop.staging", 400)
		assert.Equal(c, 400, seen["1.0.0"]+seen["2.0.0"], "%v", seen)
		assert.InDelta(c, 200, seen["2.0.0"], 60, "%v", seen)
	}, 20*time.Second, 100*time.Millisecond)
	require.NoError(t, os.WriteFile(hold, nil, 0o600))
	require.NoError(t, <-done, canaryOut)
	require.Contains(t, canaryOut, "measurement 3 of 3: error_rate 0, wants <= 0.05: ok")
	serves(t, e.url, "shop.staging", "2.0.0")
	route, err = e.st.LocalRouteGet(t.Context(), "shop.staging")
	require.NoError(t, err)
	require.Empty(t, route.CanaryID)
	// The stable instance it replaced stops now that the task completed.
	n, err = e.lp.StopReplaced(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	old, err := e.st.LocalInstanceGet(t.Context(), stable.InstanceID)
	require.NoError(t, err)
	require.Equal(t, "stopped", old.State)
}

// TestCanaryFailing: a canary failing every other request fails its
// analysis; the saga undoes the shift and stops it; the stable version
// serves every request again.
func TestCanaryFailing(t *testing.T) {
	t.Parallel()
	e := newCanaryEnv(t)
	_, out, err := e.submit("web-service", "app=cart", "version=1.0.0")
	require.NoError(t, err, out)
	serves(t, e.url, "cart.staging", "1.0.0")

	id, out, err := e.submit("canary-fast", "app=cart", "version=2.0.0-errors")
	require.True(t, errors.Is(err, errTaskNotCompleted), "got %v: %s", err, out)
	require.Contains(t, out, "measurement 1 of 3: error_rate")
	require.Contains(t, out, "wants <= 0.05: failed")
	require.Contains(t, out, "analysis failed: error_rate")
	require.Equal(t, map[string]string{"create_dns": "compensated", "deploy_canary": "compensated", "shift": "compensated",
		"hold": "completed", "analyse": "failed", "promote": "skipped"}, stepStates(t, e.st, id))
	route, err := e.st.LocalRouteGet(t.Context(), "cart.staging")
	require.NoError(t, err)
	require.Empty(t, route.CanaryID, "the canary left the route")
	serves(t, e.url, "cart.staging", "1.0.0")
}

// TestCanaryCancel: a task cancelled during its analysis stops the load
// and undoes the shift and the canary.
func TestCanaryCancel(t *testing.T) {
	t.Parallel()
	e := newCanaryEnv(t)
	_, out, err := e.submit("web-service", "app=stop", "version=1.0.0")
	require.NoError(t, err, out)
	done := make(chan error, 1)
	go func() {
		_, out, err := e.submit("canary-fast", "app=stop", "version=2.0.0", "interval=1m")
		done <- fmt.Errorf("%w: %s", err, out)
	}()
	id := e.waitStep("stop.staging", "analyse", task.StepRunning)
	route, err := e.st.LocalRouteGet(t.Context(), "stop.staging")
	require.NoError(t, err)
	// The load reaches the canary while the analysis waits for its first
	// measurement.
	require.Eventually(t, func() bool {
		return local.DefaultProxyStats.Window(route.CanaryID, time.Now().Add(-time.Minute), time.Now()).Requests > 5
	}, 20*time.Second, 20*time.Millisecond)
	req, err := http.NewRequest(http.MethodPost, e.url+"/api/v1/tasks/"+id+"/cancel", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.getenv("FLIGHTDECK_TOKEN"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)
	err = <-done
	require.ErrorIs(t, err, errTaskNotCompleted)
	states := stepStates(t, e.st, id)
	require.Equal(t, "compensated", states["shift"], "%v", states)
	require.Equal(t, "compensated", states["deploy_canary"], "%v", states)
	// The load stopped with the step: nothing reaches the canary any more.
	stopped := time.Now()
	require.Never(t, func() bool {
		return local.DefaultProxyStats.Window(route.CanaryID, stopped, time.Now()).Requests > 0
	}, 500*time.Millisecond, 50*time.Millisecond)
	serves(t, e.url, "stop.staging", "1.0.0")
}

// TestCanaryBadInput: a shift on a route with no canary and a weight out
// of range are step errors, not panics or stuck tasks.
func TestCanaryBadInput(t *testing.T) {
	t.Parallel()
	e := newCanaryEnv(t)
	_, out, err := e.submit("web-service", "app=bad", "version=1.0.0")
	require.NoError(t, err, out)
	_, out, err = e.submit("canary-fast", "app=bad", "version=2.0.0", "weight=101")
	require.True(t, errors.Is(err, errTaskNotCompleted), "got %v: %s", err, out)
	require.Contains(t, out, "with.weight: want a whole number from 0 to 100, got 101")
	_, out, err = e.submit("canary-fast", "app=bad", "version=2.0.0", "success=<= abc")
	require.True(t, errors.Is(err, errTaskNotCompleted), "got %v: %s", err, out)
	require.Contains(t, out, `after <= comes a number ("abc" is not one)`)
	serves(t, e.url, "bad.staging", "1.0.0")
}

// prometheusBin is Debian's prometheus, unpacked by go tool task
// deps:prometheus (which sets FLIGHTDECK_TEST_PROMETHEUS for go test).
func prometheusBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("FLIGHTDECK_TEST_PROMETHEUS")
	if bin == "" {
		bin, _ = filepath.Abs(filepath.Join("..", "..", ".data", "prometheus", "usr", "bin", "prometheus"))
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no prometheus binary at %s: run `go tool task deps:prometheus` (Debian's prometheus package, unpacked; no service), or set FLIGHTDECK_TEST_PROMETHEUS", bin)
	}
	return bin
}

// startPrometheus runs a real Prometheus on a free loopback port scraping
// target (host:port) every second, and returns its base URL.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	bin := prometheusBin(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: flightdeck
    scrape_interval: 1s
    static_configs: [{targets: [%q]}]
`, target)), 0o600))
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = t.Output(), t.Output()
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		resp, err := http.Get(base + "/-/ready")
		if assert.NoError(c, err) {
			resp.Body.Close()
			assert.Equal(c, http.StatusOK, resp.StatusCode)
		}
	}, 30*time.Second, 50*time.Millisecond)
	return base
}

// promValue asks Prometheus for query's single value ("" while it has none).
func promValue(t require.TestingT, base, query string) string {
	resp, err := http.Get(base + "/api/v1/query?" + url.Values{"query": {query}}.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	var doc struct {
		Data struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	if len(doc.Data.Result) != 1 {
		return ""
	}
	s, _ := doc.Data.Result[0].Value[1].(string)
	return s
}

// traffic sends requests for host through the proxy until the test ends.
func traffic(t *testing.T, base, host string) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
			req.Host = host + ".localhost"
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// TestCanaryPrometheus runs canaries whose analysis asks a real Prometheus
// that scrapes this flightdeck's /metrics: a healthy one passes on its
// request rate, one failing every other request fails on its error ratio.
func TestCanaryPrometheus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, app, version, query, success string
		pass                               bool
	}{
		{"Pass", "api", "2.0.0", `sum(rate(flightdeck_local_proxy_requests_total{host="api.staging",version="2.0.0"}[5s]))`, "> 1", true},
		{"Fail", "web", "2.0.0-errors", `sum(rate(flightdeck_local_proxy_requests_total{host="web.staging",version="2.0.0-errors",code="5xx"}[5s])) / sum(rate(flightdeck_local_proxy_requests_total{host="web.staging",version="2.0.0-errors"}[5s]))`, "<= 0.05", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newCanaryEnv(t)
			prom := startPrometheus(t, strings.TrimPrefix(e.url, "http://"))
			host := tc.app + ".staging"
			_, out, err := e.submit("web-service", "app="+tc.app, "version=1.0.0")
			require.NoError(t, err, out)
			hold := filepath.Join(e.dir, "release")
			type result struct {
				id, out string
				err     error
			}
			done := make(chan result, 1)
			go func() {
				id, out, err := e.submit("canary-prom", "app="+tc.app, "version="+tc.version, "hold="+hold,
					"prom_url="+prom, "query="+tc.query, "success="+tc.success)
				done <- result{id, out, err}
			}()
			e.waitStep(host, "hold", task.StepRunning)
			traffic(t, e.url, host)
			// Released once Prometheus has scraped enough of the canary
			// to answer: every measurement then is a real value.
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.NotEmpty(c, promValue(c, prom, tc.query))
			}, 60*time.Second, 200*time.Millisecond)
			require.NoError(t, os.WriteFile(hold, nil, 0o600))
			res := <-done
			if tc.pass {
				require.NoError(t, res.err, res.out)
				require.Contains(t, res.out, "measurement 3 of 3: query ")
				serves(t, e.url, host, tc.version)
				return
			}
			require.True(t, errors.Is(res.err, errTaskNotCompleted), "got %v: %s", res.err, res.out)
			require.Contains(t, res.out, "wants <= 0.05: failed")
			require.Contains(t, res.out, "analysis failed: query 0.")
			require.Equal(t, "compensated", stepStates(t, e.st, res.id)["shift"])
			serves(t, e.url, host, "1.0.0")
		})
	}
}

// TestCanaryServeProcesses runs real serve processes on one database: a
// web one and a worker route the same split while a canary stands; the
// worker is SIGKILLed during the analysis, the split stays as it was, and
// a new worker resumes the task, measures again and promotes the canary.
func TestCanaryServeProcesses(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.URL(t)
	spool, err := store.Open(t.Context(), dbURL, 4)
	require.NoError(t, err)
	t.Cleanup(spool.Close)
	// Runs after the serve processes' cleanups (registered later): the
	// SIGKILLed worker's demo apps outlive it, as any killed server's do.
	t.Cleanup(func() { stopDemoApps(t, spool) })
	st := store.New(spool)
	ctx := t.Context()
	_, err = st.UserAdd(ctx, store.UserAddParams{Email: "dev@acme.test", Team: "acme", Role: auth.RoleDeployer})
	require.NoError(t, err)
	token, hash := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, st.TokenCreate(ctx, "dev@acme.test", "cli", hash))
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fast.yaml"), []byte(canaryPipelines), 0o600))

	// serve starts "flightdeck serve" (this test binary, see TestMain) and
	// waits until it is ready.
	serve := func(role string) (base string, cmd *exec.Cmd) {
		addr := freeAddr(t)
		cmd = exec.Command(os.Args[0], "serve", "--addr", addr, "--role", role, "--workers", "2", "--grace", "5s")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "FLIGHTDECK_PIPELINES="+dir, "FLIGHTDECK_POLL_INTERVAL=50ms",
			"FLIGHTDECK_LEASE=1s", "FLIGHTDECK_LOCAL_STOP_ON_EXIT=1")
		cmd.Stdout, cmd.Stderr = io.Discard, t.Output()
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(os.Interrupt) // a graceful stop stops its demo apps
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		})
		base = "http://" + addr
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			resp, err := http.Get(base + "/readyz")
			if assert.NoError(c, err) {
				resp.Body.Close()
				assert.Equal(c, http.StatusOK, resp.StatusCode)
			}
		}, 60*time.Second, 50*time.Millisecond)
		return base, cmd
	}
	web, _ := serve("web")
	worker, workerCmd := serve("worker")
	getenv := func(k string) string { return map[string]string{"FLIGHTDECK_URL": web, "FLIGHTDECK_TOKEN": token}[k] }
	submit := func(params ...string) (string, error) {
		args := []string{"submit", "--pipeline", params[0], "--watch"}
		for _, p := range params[1:] {
			args = append(args, "--param", p)
		}
		var out, errOut bytes.Buffer
		err := run(ctx, args, getenv, &out, &errOut)
		return out.String() + errOut.String(), err
	}
	out, err := submit("web-service", "app=shop", "version=1.0.0")
	require.NoError(t, err, out)
	serves(t, web, "shop.staging", "1.0.0")

	hold := filepath.Join(t.TempDir(), "release")
	done := make(chan error, 1)
	var canaryOut string
	go func() {
		var err error
		canaryOut, err = submit("canary-fast", "app=shop", "version=2.0.0", "hold="+hold, "interval=1s")
		done <- err
	}()
	e := &canaryEnv{t: t, st: st}
	id := e.waitStep("shop.staging", "hold", task.StepRunning)
	for _, base := range []string{web, worker} { // both processes split alike
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			seen := versions(c, base, "shop.staging", 400)
			assert.Equal(c, 400, seen["1.0.0"]+seen["2.0.0"], "%v", seen)
			assert.InDelta(c, 200, seen["2.0.0"], 60, "%s: %v", base, seen)
		}, 20*time.Second, 100*time.Millisecond)
	}
	require.NoError(t, os.WriteFile(hold, nil, 0o600))

	// Killed once the analysis took a measurement: no graceful anything.
	require.Eventually(t, func() bool {
		evs, err := st.EventsAfter(ctx, id, 0, 1000)
		require.NoError(t, err)
		for _, ev := range evs {
			if strings.Contains(ev.Message, "measurement 1 of 3") {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "events: %s", eventsText(t, st, id))
	require.NoError(t, workerCmd.Process.Kill())
	route, err := st.LocalRouteGet(ctx, "shop.staging")
	require.NoError(t, err)
	require.NotEmpty(t, route.CanaryID)
	require.Equal(t, 50, route.CanaryWeight, "the split outlives the worker")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		seen := versions(c, web, "shop.staging", 200)
		assert.InDelta(c, 100, seen["2.0.0"], 40, "%v", seen)
	}, 20*time.Second, 100*time.Millisecond)

	serve("worker") // resumes the task once the dead worker's lease ends
	require.NoError(t, <-done, canaryOut)
	serves(t, web, "shop.staging", "2.0.0")
	evs, err := st.EventsAfter(ctx, id, 0, 1000)
	require.NoError(t, err)
	firsts := 0
	for _, ev := range evs {
		if strings.Contains(ev.Message, "measurement 1 of 3") {
			firsts++
		}
	}
	require.GreaterOrEqual(t, firsts, 2, "the resumed analysis measured again from the start")
}

func eventsText(t *testing.T, st *store.Store, id string) string {
	evs, err := st.EventsAfter(context.Background(), id, 0, 1000)
	require.NoError(t, err)
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%s %s %s %s\n", ev.Type, ev.StepName, ev.Message, ev.Data)
	}
	return b.String()
}

// stopDemoApps kills the demo apps of the test's database that still run
// (a SIGKILLed server never stopped its own): every process that is a
// demoapp of one of its instances, found by the --instance argument, since
// a replaced process is no longer the pid the database holds.
func stopDemoApps(t *testing.T, pool *pgxpool.Pool) {
	// t.Context() has ended by the time cleanups run
	rows, err := pool.Query(context.Background(), `SELECT id::text FROM local_instances`)
	if err != nil {
		t.Errorf("error listing demo apps: %v", err)
		return
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Errorf("error listing demo apps: %v", err)
		return
	}
	ours := make(map[string]bool, len(ids))
	for _, id := range ids {
		ours[id] = true
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if !slices.Contains(args, "demoapp") {
			continue
		}
		at := slices.Index(args, "--instance")
		if at < 0 || at+1 >= len(args) || !ours[args[at+1]] {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	}
}
