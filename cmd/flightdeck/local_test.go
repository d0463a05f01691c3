package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flightdeck/internal/notify"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flightdeck/handlers"
	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/internal/dbtest"
	"flightdeck/store"
	"flightdeck/workflow/action/local"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
)

// TestMain lets the test binary serve as "flightdeck demoapp", which the
// local provider starts from its own executable, and as the whole CLI for
// the README's examples (FLIGHTDECK_AS_CLI=1, see readme_test.go).
func TestMain(m *testing.M) {
	// ... and as "flightdeck serve", which the canary tests run as real
	// processes (TestCanaryServeProcesses).
	if len(os.Args) > 1 && (os.Args[1] == "demoapp" || os.Args[1] == "serve" || os.Getenv("FLIGHTDECK_AS_CLI") == "1") {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Setenv("GORACE", "atexit_sleep_ms=0") // demo apps built with -race: no second of sleep on exit
	os.Exit(m.Run())
}

// TestWebServiceBlueGreen deploys the built-in web-service pipeline through
// the API, the worker pool, the saga runner and the local provider, and
// reads the app back through flightdeck's own proxy by Host header.
func TestWebServiceBlueGreen(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	ctx := t.Context()
	_, err := st.UserAdd(ctx, store.UserAddParams{Email: "dev@acme.test", Team: "acme", Role: auth.RoleDeployer})
	require.NoError(t, err)
	token, hash := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, st.TokenCreate(ctx, "dev@acme.test", "cli", hash))

	cfg, err := config.Load(func(string) string { return "" })
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	catalog, err := pipeline.NewCatalog(pipeline.Builtin()...)
	require.NoError(t, err)
	lp, err := local.New(local.Config{Store: st, Logger: logger, Node: "test-node", Executable: os.Args[0],
		HealthTimeout: 30 * time.Second, MonitorInterval: 50 * time.Millisecond, MonitorTick: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(lp.StopAll)
	n := notify.NewListener(st, logger)
	hub := notify.NewHub()
	hub.Attach(n)
	t.Cleanup(hub.Follow(st.Wakeups()))
	pool := queue.New(st, taskHandlers(cfg, st, catalog, logger, lp), queue.Config{Workers: 2, PollInterval: 20 * time.Millisecond, Logger: logger})
	pool.Attach(n)
	srv := httptest.NewServer(handlers.New(handlers.Deps{Config: cfg, Store: st, Logger: logger, Pipelines: catalog, Hub: hub}))
	bg, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(bg) })
	wg.Go(func() { _ = pool.Run(bg) })
	wg.Go(func() { _ = lp.RunMonitors(bg) })
	t.Cleanup(func() { srv.Close(); cancel(); wg.Wait() })

	getenv := func(k string) string {
		return map[string]string{"FLIGHTDECK_URL": srv.URL, "FLIGHTDECK_TOKEN": token}[k]
	}
	deploy := func(version string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, []string{"submit", "--pipeline", "web-service", "--param", "app=shop", "--param", "env=staging",
			"--param", "version=" + version, "--watch"}, getenv, &out, &errOut)
		return out.String() + errOut.String(), err
	}
	app := func() (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/", nil)
		require.NoError(t, err)
		req.Host = "shop.staging.localhost:" + strings.TrimPrefix(srv.URL, "http://127.0.0.1:")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	serves := func(version string) {
		t.Helper()
		// Each serve process trusts a route lookup for a few seconds.
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			code, body := app()
			assert.Equal(c, http.StatusOK, code)
			assert.Contains(c, body, "demo app version "+version)
		}, 15*time.Second, 50*time.Millisecond)
	}

	out, err := deploy("1.0.0")
	require.NoError(t, err, out)
	serves("1.0.0")

	out, err = deploy(local.BrokenVersion)
	require.True(t, errors.Is(err, errTaskNotCompleted), "got %v: %s", err, out)
	require.Contains(t, out, "health check failed")
	require.Contains(t, out, "task.failed")
	serves("1.0.0") // the route never moved; the broken process is gone

	brokenID := strings.SplitN(out, "\n", 2)[0]
	rows, err := st.StepList(ctx, brokenID)
	require.NoError(t, err)
	states := map[string]string{}
	for _, r := range rows {
		states[r.Name] = string(r.State)
	}
	require.Equal(t, map[string]string{"create_dns": "compensated", "issue_cert": "compensated",
		"deploy_container": "failed", "configure_monitoring": "skipped"}, states)

	// Its certificate was revoked by the compensation: the CRL lists it alone.
	der, err := local.CRL(ctx, st)
	require.NoError(t, err)
	crl, err := x509.ParseRevocationList(der)
	require.NoError(t, err)
	require.Len(t, crl.RevokedCertificateEntries, 1)

	out, err = deploy("2.0.0")
	require.NoError(t, err, out)
	serves("2.0.0")
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestServeLocal runs the serve command: a deploy is reachable over the
// proxy and over HTTPS with a certificate of the local CA; with
// FLIGHTDECK_LOCAL_STOP_ON_EXIT its instance stops with the server, and the
// next server start restarts it (the route's current instance).
func TestServeLocal(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.URL(t)
	spool, err := store.Open(t.Context(), dbURL, 4)
	require.NoError(t, err)
	t.Cleanup(spool.Close)
	st := store.New(spool)
	ctx := t.Context()
	_, err = st.UserAdd(ctx, store.UserAddParams{Email: "dev@acme.test", Team: "acme", Role: auth.RoleDeployer})
	require.NoError(t, err)
	token, hash := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, st.TokenCreate(ctx, "dev@acme.test", "cli", hash))

	addr, tlsAddr := freeAddr(t), freeAddr(t)
	env := map[string]string{"DATABASE_URL": dbURL, "FLIGHTDECK_LOCAL_STOP_ON_EXIT": "1", "FLIGHTDECK_POLL_INTERVAL": "50ms",
		"FLIGHTDECK_LOCAL_HEALTH_TIMEOUT": "60s", // a loaded test machine starts demo apps slowly
		"FLIGHTDECK_URL":                  "http://" + addr, "FLIGHTDECK_TOKEN": token}
	getenv := func(k string) string { return env[k] }
	serve := func() (stop func()) {
		sctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- run(sctx, []string{"serve", "--addr", addr, "--local-tls-addr", tlsAddr, "--workers", "2", "--grace", "5s"}, getenv, io.Discard, t.Output())
		}()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			resp, err := http.Get("http://" + addr + "/readyz")
			if assert.NoError(c, err) {
				resp.Body.Close()
				assert.Equal(c, http.StatusOK, resp.StatusCode)
			}
		}, 30*time.Second, 20*time.Millisecond)
		return func() {
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop")
			}
		}
	}
	appHTTP := func(c *assert.CollectT, version string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		req.Host = "shop.staging.localhost"
		resp, err := http.DefaultClient.Do(req)
		if !assert.NoError(c, err) {
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		assert.Equal(c, http.StatusOK, resp.StatusCode)
		assert.Contains(c, string(body), "demo app version "+version)
	}

	stop := serve()
	var out, errOut bytes.Buffer
	require.NoError(t, run(ctx, []string{"submit", "--pipeline", "web-service", "--param", "app=shop", "--param", "version=1.0.0", "--watch"},
		getenv, &out, &errOut), out.String()+errOut.String())
	require.EventuallyWithT(t, func(c *assert.CollectT) { appHTTP(c, "1.0.0") }, 15*time.Second, 50*time.Millisecond)

	// HTTPS with the certificate issue_cert made, verified against the CA.
	ca, err := local.LoadCA(ctx, st)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "shop.staging.localhost"}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+tlsAddr+"/", nil)
	require.NoError(t, err)
	req.Host = "shop.staging.localhost"
	resp, err := client.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(body), "demo app version 1.0.0")

	route, err := st.LocalRouteGet(ctx, "shop.staging")
	require.NoError(t, err)
	inst, err := st.LocalInstanceGet(ctx, route.InstanceID)
	require.NoError(t, err)
	stop()
	_, err = os.Stat(fmt.Sprintf("/proc/%d", inst.PID))
	require.True(t, os.IsNotExist(err) || zombieOrGone(inst.PID), "the demo app stopped with the server")

	// The next start restarts the route's instance.
	stop = serve()
	t.Cleanup(stop)
	require.EventuallyWithT(t, func(c *assert.CollectT) { appHTTP(c, "1.0.0") }, 30*time.Second, 50*time.Millisecond)
	again, err := st.LocalInstanceGet(ctx, route.InstanceID)
	require.NoError(t, err)
	require.NotEqual(t, inst.PID, again.PID)
	require.Equal(t, "running", again.State)
}

// zombieOrGone: an exited child not yet reaped still has /proc/PID.
func zombieOrGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}
