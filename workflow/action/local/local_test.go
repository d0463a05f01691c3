package local

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/action"
)

// TestMain lets the test binary be the demo app: the provider starts
// os.Args[0] with "demoapp …", as the server starts itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "demoapp" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := RunDemoApp(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// Demo apps built with -race would sleep a second on exit.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	os.Exit(m.Run())
}

type testBundle struct {
	st *store.Store
	p  *Provider
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	st := dbtest.Store(t)
	testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	testfactory.User(t, st, "dev@other.test", "other", auth.RoleDeployer)
	p := newProvider(t, st, "node-a")
	return &testBundle{st: st, p: p}
}

func newProvider(t *testing.T, st *store.Store, node string) *Provider {
	t.Helper()
	p, err := New(Config{Store: st, Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		Node: node, Executable: os.Args[0], HealthTimeout: 20 * time.Second, StopTimeout: 5 * time.Second, MonitorInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(p.StopAll)
	return p
}

// call is one action attempt and what it reported.
type call struct {
	out  json.RawMessage
	err  error
	logs []string
	art  string
}

type callOpts struct {
	team     string
	with     map[string]any
	params   map[string]any
	key      string
	undo     bool
	previous json.RawMessage
}

func (b *testBundle) run(t *testing.T, name string, o callOpts) call {
	t.Helper()
	return runOn(t, b.p, name, o)
}

func runOn(t *testing.T, p *Provider, name string, o callOpts) call {
	t.Helper()
	var c call
	var mu sync.Mutex
	var art bytes.Buffer
	if o.team == "" {
		o.team = "acme"
	}
	if o.params == nil {
		o.params = map[string]any{"app": "shop", "env": "staging"}
	}
	key := o.key
	if o.undo {
		key += ":compensate"
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c.out, c.err = p.Action(name).Run(ctx, action.Input{
		TaskID: "t", Team: o.team, Step: "s", StepIndex: 1, Attempt: 1, IdempotencyKey: key, Compensating: o.undo,
		With: o.with, Params: o.params, Log: func(s string) { mu.Lock(); c.logs = append(c.logs, s); mu.Unlock() },
		Output: &art, Previous: o.previous,
	})
	c.art = art.String()
	return c
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

func permanent(err error) bool {
	var p *action.Permanent
	return errors.As(err, &p)
}

func TestRouteHost(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"shop.staging.localhost":       "shop.staging",
		"shop.staging.localhost:18741": "shop.staging",
		"SHOP.Staging.LOCALHOST.":      "shop.staging",
		"shop.staging":                 "shop.staging",
		"shop.staging:80":              "shop.staging",
		"localhost:8080":               "",
		"127.0.0.1:8080":               "",
		"[::1]:8080":                   "",
		"":                             "",
		"bad_host.staging.localhost":   "",
		"-x.staging":                   "",
	} {
		require.Equal(t, want, RouteHost(in), "RouteHost(%q)", in)
	}
}

func TestDNS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	t.Run("CreateIsIdempotentAndUndoRemovesWhatItMade", func(t *testing.T) {
		c := b.run(t, "local.dns_create", callOpts{key: "k1"})
		require.NoError(t, c.err)
		require.JSONEq(t, `{"host":"shop.staging","created":true}`, string(c.out))
		again := b.run(t, "local.dns_create", callOpts{key: "k1"})
		require.NoError(t, again.err)
		require.JSONEq(t, string(c.out), string(again.out), "a re-run returns the recorded effect")
		require.Contains(t, again.logs[0], "already done")

		// A route with no instance answers 503: the proxy sees no target.
		tg, err := b.st.LocalRouteTarget(ctx, "shop.staging")
		require.NoError(t, err)
		require.Empty(t, tg.InstanceID)

		// Another task re-creating it: a no-op whose undo leaves the route.
		c2 := b.run(t, "local.dns_create", callOpts{key: "k2"})
		require.NoError(t, c2.err)
		require.JSONEq(t, `{"host":"shop.staging"}`, string(c2.out))
		u2 := b.run(t, "local.dns_delete", callOpts{key: "k2", undo: true, previous: c2.out})
		require.NoError(t, u2.err)
		_, err = b.st.LocalRouteGet(ctx, "shop.staging")
		require.NoError(t, err, "the route made by k1 stays")

		u1 := b.run(t, "local.dns_delete", callOpts{key: "k1", undo: true, previous: c.out})
		require.NoError(t, u1.err)
		_, err = b.st.LocalRouteGet(ctx, "shop.staging")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("DeleteAndItsUndoRestore", func(t *testing.T) {
		require.NoError(t, b.run(t, "local.dns_create", callOpts{key: "d0", with: map[string]any{"host": "api.prod"}}).err)
		d := b.run(t, "local.dns_delete", callOpts{key: "d1", with: map[string]any{"host": "api.prod"}})
		require.NoError(t, d.err)
		require.JSONEq(t, `{"host":"api.prod","deleted":true}`, string(d.out))
		_, err := b.st.LocalRouteGet(ctx, "api.prod")
		require.ErrorIs(t, err, store.ErrNotFound)
		u := b.run(t, "local.dns_create", callOpts{key: "d1", undo: true, previous: d.out, with: map[string]any{"host": "api.prod"}})
		require.NoError(t, u.err)
		_, err = b.st.LocalRouteGet(ctx, "api.prod")
		require.NoError(t, err)
	})

	t.Run("AnotherTeamsHostIsRefused", func(t *testing.T) {
		require.NoError(t, b.run(t, "local.dns_create", callOpts{key: "o1", with: map[string]any{"host": "mine.staging"}}).err)
		c := b.run(t, "local.dns_create", callOpts{key: "o2", team: "other", with: map[string]any{"host": "mine.staging"}})
		require.Error(t, c.err)
		require.True(t, permanent(c.err))
		require.ErrorContains(t, c.err, "another team")
	})

	t.Run("BadInputIsPermanent", func(t *testing.T) {
		for _, o := range []callOpts{
			{key: "b1", with: map[string]any{"host": 42}},
			{key: "b2", with: map[string]any{"host": "no spaces.staging"}},
			{key: "b3", with: map[string]any{"host": "single"}},
			{key: "b4", params: map[string]any{"app": "shop"}},
			{key: "b5", params: map[string]any{"app": 7, "env": "staging"}},
		} {
			c := b.run(t, "local.dns_create", o)
			require.Error(t, c.err, "%+v", o)
			require.True(t, permanent(c.err), "%v", c.err)
		}
		c := b.run(t, "local.dns_create", callOpts{})
		require.True(t, permanent(c.err), "no key")
	})
}

func TestCertificates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	c := b.run(t, "local.cert_issue", callOpts{key: "c1", with: map[string]any{"host": "shop.staging.localhost"}})
	require.NoError(t, c.err)
	issued := decode[store.LocalCert](t, c.out)
	require.Equal(t, "shop.staging.localhost", issued.Host)

	// The artifact holds the certificate, which the CA really signed.
	blk, rest := pem.Decode([]byte(c.art))
	require.NotNil(t, blk)
	cert, err := x509.ParseCertificate(blk.Bytes)
	require.NoError(t, err)
	caBlk, _ := pem.Decode(rest)
	require.NotNil(t, caBlk)
	caCert, err := x509.ParseCertificate(caBlk.Bytes)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	_, err = cert.Verify(x509.VerifyOptions{DNSName: "shop.staging.localhost", Roots: roots})
	require.NoError(t, err)
	require.Equal(t, issued.Serial, hex.EncodeToString(cert.SerialNumber.Bytes()))

	again := b.run(t, "local.cert_issue", callOpts{key: "c1", with: map[string]any{"host": "shop.staging.localhost"}})
	require.NoError(t, again.err)
	require.Equal(t, issued.Serial, decode[store.LocalCert](t, again.out).Serial, "same key, same certificate")

	// The default host comes from the params.
	d := b.run(t, "local.cert_issue", callOpts{key: "c2"})
	require.NoError(t, d.err)
	require.Equal(t, "shop.staging.localhost", decode[store.LocalCert](t, d.out).Host)

	crlSerials := func() []string {
		der, err := CRL(ctx, b.st)
		require.NoError(t, err)
		crl, err := x509.ParseRevocationList(der)
		require.NoError(t, err)
		require.NoError(t, crl.CheckSignatureFrom(caCert))
		var out []string
		for _, e := range crl.RevokedCertificateEntries {
			out = append(out, hex.EncodeToString(e.SerialNumber.Bytes()))
		}
		return out
	}
	require.Empty(t, crlSerials())

	u := b.run(t, "local.cert_revoke", callOpts{key: "c1", undo: true, previous: c.out})
	require.NoError(t, u.err)
	require.Equal(t, []string{issued.Serial}, crlSerials())
	u2 := b.run(t, "local.cert_revoke", callOpts{key: "c1", undo: true, previous: c.out})
	require.NoError(t, u2.err)
	require.Equal(t, []string{issued.Serial}, crlSerials(), "a re-run revokes nothing more")

	// Forward revoke by host takes the newest valid one (c2's).
	r := b.run(t, "local.cert_revoke", callOpts{key: "c3"})
	require.NoError(t, r.err)
	require.Len(t, crlSerials(), 2)
	r2 := b.run(t, "local.cert_revoke", callOpts{key: "c4", with: map[string]any{"serial": "zz"}})
	require.True(t, permanent(r2.err))
	r3 := b.run(t, "local.cert_revoke", callOpts{key: "c5", team: "other"})
	require.True(t, permanent(r3.err), "nothing of team other to revoke: %v", r3.err)

	// Another process loads the same CA.
	ca1, err := LoadCA(ctx, b.st)
	require.NoError(t, err)
	require.True(t, ca1.Cert.Equal(caCert))
	require.Zero(t, new(big.Int).Cmp(big.NewInt(0)))
}

// get fetches / of an instance and returns the body.
func get(t *testing.T, port int) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

func (b *testBundle) current(t *testing.T, host string) store.LocalTarget {
	t.Helper()
	tg, err := b.st.LocalRouteTarget(t.Context(), host)
	require.NoError(t, err)
	return tg
}

func TestInstancesBlueGreen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	require.NoError(t, b.run(t, "local.dns_create", callOpts{key: "dns"}).err)

	v1 := b.run(t, "local.instance_start", callOpts{key: "v1", with: map[string]any{"version": "1.0.0"}})
	require.NoError(t, v1.err)
	a1 := decode[store.LocalActivation](t, v1.out)
	require.Empty(t, a1.PreviousID)
	require.Equal(t, a1.InstanceID, b.current(t, "shop.staging").InstanceID)
	require.Contains(t, get(t, a1.Port), "demo app version 1.0.0")

	again := b.run(t, "local.instance_start", callOpts{key: "v1", with: map[string]any{"version": "1.0.0"}})
	require.NoError(t, again.err)
	require.JSONEq(t, string(v1.out), string(again.out), "a re-run starts nothing")

	v2 := b.run(t, "local.instance_start", callOpts{key: "v2", with: map[string]any{"version": "2.0.0"}})
	require.NoError(t, v2.err)
	a2 := decode[store.LocalActivation](t, v2.out)
	require.Equal(t, a1.InstanceID, a2.PreviousID)
	tg := b.current(t, "shop.staging")
	require.Equal(t, a2.InstanceID, tg.InstanceID)
	require.Contains(t, get(t, tg.Port), "demo app version 2.0.0")

	// A broken version fails its health check, is stopped, the route stays.
	br := b.run(t, "local.instance_start", callOpts{key: "v3", with: map[string]any{"version": BrokenVersion}})
	require.Error(t, br.err)
	require.ErrorContains(t, br.err, "health check failed")
	require.Equal(t, a2.InstanceID, b.current(t, "shop.staging").InstanceID)
	broken, err := b.st.LocalInstanceGetByKey(ctx, "v3")
	require.NoError(t, err)
	require.Equal(t, "failed", broken.State)
	require.False(t, ours(broken.PID, broken.ID), "the broken process is gone")

	// Undo v2: v1 serves again, v2's process is gone.
	u := b.run(t, "local.instance_stop", callOpts{key: "v2", undo: true, previous: v2.out})
	require.NoError(t, u.err)
	require.JSONEq(t, fmt.Sprintf(`{"instance_id":%q,"host":"shop.staging","version":"2.0.0","restored_id":%q}`, a2.InstanceID, a1.InstanceID), string(u.out))
	tg = b.current(t, "shop.staging")
	require.Equal(t, a1.InstanceID, tg.InstanceID)
	require.Contains(t, get(t, tg.Port), "demo app version 1.0.0")
	i2, err := b.st.LocalInstanceGet(ctx, a2.InstanceID)
	require.NoError(t, err)
	require.Equal(t, "stopped", i2.State)
	require.False(t, ours(a2.PID, a2.InstanceID))
	require.NoError(t, b.run(t, "local.instance_stop", callOpts{key: "v2", undo: true, previous: v2.out}).err, "re-run")

	// Undo v1 (the first deploy): the route has no instance, 503.
	require.NoError(t, b.run(t, "local.instance_stop", callOpts{key: "v1", undo: true, previous: v1.out}).err)
	require.Empty(t, b.current(t, "shop.staging").InstanceID)
	require.False(t, ours(a1.PID, a1.InstanceID))
}

func TestInstanceOldStandbysStop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.run(t, "local.dns_create", callOpts{key: "dns"}).err)
	var acts []store.LocalActivation
	for i, v := range []string{"1.0.0", "2.0.0", "3.0.0"} {
		c := b.run(t, "local.instance_start", callOpts{key: fmt.Sprint("v", i), with: map[string]any{"version": v}})
		require.NoError(t, c.err)
		acts = append(acts, decode[store.LocalActivation](t, c.out))
	}
	require.False(t, ours(acts[0].PID, acts[0].InstanceID), "v1 is stopped once v3 serves")
	require.True(t, ours(acts[1].PID, acts[1].InstanceID), "v2 stays as the standby for v3's undo")
	i1, err := b.st.LocalInstanceGet(t.Context(), acts[0].InstanceID)
	require.NoError(t, err)
	require.Equal(t, "stopped", i1.State)

	// Undo v3 makes v2 current; undo v2 then restarts v1, which was stopped.
	require.NoError(t, b.run(t, "local.instance_stop", callOpts{key: "v2", undo: true, previous: mustJSON(t, acts[2])}).err)
	require.Equal(t, acts[1].InstanceID, b.current(t, "shop.staging").InstanceID)
	require.NoError(t, b.run(t, "local.instance_stop", callOpts{key: "v1", undo: true, previous: mustJSON(t, acts[1])}).err)
	tg := b.current(t, "shop.staging")
	require.Equal(t, acts[0].InstanceID, tg.InstanceID)
	require.Contains(t, get(t, tg.Port), "demo app version 1.0.0")
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestInstanceRerunAfterCrashStartsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	require.NoError(t, b.run(t, "local.dns_create", callOpts{key: "dns"}).err)
	// An attempt that died after starting its process, before activating.
	inst, err := b.st.LocalInstanceBegin(ctx, store.LocalInstanceBeginParams{Team: "acme", Host: "shop.staging", Version: "1.0.0", Node: "node-a", Key: "k"})
	require.NoError(t, err)
	pid, port, err := b.p.spawn(ctx, inst.ID, "1.0.0")
	require.NoError(t, err)
	require.NoError(t, b.st.LocalInstanceSetProcess(ctx, inst.ID, pid, port, "starting"))
	require.True(t, ours(pid, inst.ID))

	c := b.run(t, "local.instance_start", callOpts{key: "k", with: map[string]any{"version": "1.0.0"}})
	require.NoError(t, c.err)
	a := decode[store.LocalActivation](t, c.out)
	require.Equal(t, inst.ID, a.InstanceID, "the same instance row")
	require.NotEqual(t, pid, a.PID)
	require.False(t, ours(pid, inst.ID), "the leftover process was stopped")
	insts, err := b.st.LocalInstanceListByNode(ctx, "node-a", "starting", "running")
	require.NoError(t, err)
	require.Len(t, insts, 1, "one instance for one key")

	// A crash before the pid was even recorded: found by its command line.
	inst2, err := b.st.LocalInstanceBegin(ctx, store.LocalInstanceBeginParams{Team: "acme", Host: "shop.staging", Version: "2.0.0", Node: "node-a", Key: "k2"})
	require.NoError(t, err)
	orphan, _, err := b.p.spawn(ctx, inst2.ID, "2.0.0")
	require.NoError(t, err)
	require.Equal(t, []int{orphan}, instancePIDs(inst2.ID))
	c2 := b.run(t, "local.instance_start", callOpts{key: "k2", with: map[string]any{"version": "2.0.0"}})
	require.NoError(t, c2.err)
	require.False(t, ours(orphan, inst2.ID), "the unrecorded process was stopped")
	require.Equal(t, []int{decode[store.LocalActivation](t, c2.out).PID}, instancePIDs(inst2.ID))
}

func TestRecoverEndsAbandonedStarts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	require.NoError(t, b.run(t, "local.dns_create", callOpts{key: "dns"}).err)
	inst, err := b.st.LocalInstanceBegin(ctx, store.LocalInstanceBeginParams{Team: "acme", Host: "shop.staging", Version: "1.0.0", Node: "node-a", Key: "k"})
	require.NoError(t, err)
	pid, _, err := b.p.spawn(ctx, inst.ID, "1.0.0")
	require.NoError(t, err)

	// With the default (minutes), a fresh start is left to its step.
	rep, err := b.p.Recover(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Failed)
	require.True(t, ours(pid, inst.ID))

	p2, err := New(Config{Store: b.st, Node: "node-a", Executable: os.Args[0], AbandonedStart: time.Millisecond})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rep, err := p2.Recover(ctx)
		require.NoError(t, err)
		return len(rep.Failed) == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.False(t, ours(pid, inst.ID), "its process was stopped")
	got, err := b.st.LocalInstanceGet(ctx, inst.ID)
	require.NoError(t, err)
	require.Equal(t, "failed", got.State)

	// The task coming back later still starts it, once.
	c := b.run(t, "local.instance_start", callOpts{key: "k", with: map[string]any{"version": "1.0.0"}})
	require.NoError(t, c.err)
	require.Equal(t, inst.ID, decode[store.LocalActivation](t, c.out).InstanceID)
}

func TestChildEnvDropsServerSecrets(t *testing.T) {
	t.Parallel()
	got := childEnv([]string{"PATH=/bin", "DATABASE_URL=postgres://u:pw@h/db", "OPENAI_API_KEY=sk", "HOME=/root", "FLIGHTDECK_TOKEN=x", "TZ=UTC"})
	require.Equal(t, []string{"PATH=/bin", "HOME=/root", "TZ=UTC"}, got)
}

func TestInstanceInputs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.run(t, "local.instance_start", callOpts{key: "n", with: map[string]any{"version": "1.0.0"}})
	require.True(t, permanent(c.err), "no route: %v", c.err)
	require.ErrorContains(t, c.err, "dns_create first")
	require.NoError(t, b.run(t, "local.dns_create", callOpts{key: "dns"}).err)
	for _, with := range []map[string]any{nil, {"version": ""}, {"version": "1 0"}, {"version": 3}, {"version": strings.Repeat("1", 41)}} {
		c := b.run(t, "local.instance_start", callOpts{key: fmt.Sprint(with), with: with})
		require.True(t, permanent(c.err), "%v: %v", with, c.err)
	}
	require.True(t, permanent(b.run(t, "local.instance_stop", callOpts{key: "x"}).err), "not as a forward step")
	u := b.run(t, "local.instance_stop", callOpts{key: "never", undo: true})
	require.NoError(t, u.err, "nothing started: nothing to undo")
}

func TestMonitors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	acme := func() []string {
		u, _, err := b.st.UserGetByEmail(ctx, "dev@acme.test")
		require.NoError(t, err)
		return u.TeamIDs()
	}()
	require.NoError(t, b.run(t, "local.dns_create", callOpts{key: "dns"}).err)
	m := b.run(t, "local.monitor_create", callOpts{key: "m", with: map[string]any{"interval": "20ms"}})
	require.NoError(t, m.err)
	require.JSONEq(t, `{"host":"shop.staging","interval_ms":20,"created":true}`, string(m.out))

	alerts := func(open bool) []store.LocalAlert {
		a, err := b.st.LocalAlertList(ctx, acme, open, 10)
		require.NoError(t, err)
		return a
	}
	// No instance yet: an alert opens (once, however many rounds).
	require.Eventually(t, func() bool { _, err := b.p.CheckMonitors(ctx); require.NoError(t, err); return len(alerts(true)) == 1 },
		10*time.Second, 10*time.Millisecond)
	require.Contains(t, alerts(true)[0].Message, "no running instance")
	for range 3 {
		_, err := b.p.CheckMonitors(ctx)
		require.NoError(t, err)
	}
	require.Len(t, alerts(false), 1)

	// A healthy instance resolves it.
	require.NoError(t, b.run(t, "local.instance_start", callOpts{key: "v1", with: map[string]any{"version": "1.0.0"}}).err)
	require.Eventually(t, func() bool { _, err := b.p.CheckMonitors(ctx); require.NoError(t, err); return len(alerts(true)) == 0 },
		10*time.Second, 10*time.Millisecond)
	require.Equal(t, "resolved", alerts(false)[0].State)

	// Re-creating is a no-op whose undo leaves the monitor; undoing the
	// real one deletes it; undoing a delete restores it.
	m2 := b.run(t, "local.monitor_create", callOpts{key: "m2"})
	require.NoError(t, m2.err)
	require.NoError(t, b.run(t, "local.monitor_delete", callOpts{key: "m2", undo: true, previous: m2.out}).err)
	d := b.run(t, "local.monitor_delete", callOpts{key: "m", undo: true, previous: m.out})
	require.NoError(t, d.err)
	require.JSONEq(t, `{"host":"shop.staging","interval_ms":20,"deleted":true}`, string(d.out))
	n, err := b.p.CheckMonitors(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "no monitor left")
	r := b.run(t, "local.monitor_create", callOpts{key: "d", undo: true, previous: d.out})
	require.NoError(t, r.err)
	require.JSONEq(t, `{"host":"shop.staging","interval_ms":20,"created":true}`, string(r.out))

	for _, with := range []map[string]any{{"interval": "soon"}, {"interval": "1ns"}, {"interval": 5}, {"interval": "48h"}} {
		c := b.run(t, "local.monitor_create", callOpts{key: fmt.Sprint(with), with: with})
		require.True(t, permanent(c.err), "%v: %v", with, c.err)
	}
}

func TestRecover(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	require.NoError(t, b.run(t, "local.dns_create", callOpts{key: "dns"}).err)
	v1 := decode[store.LocalActivation](t, b.run(t, "local.instance_start", callOpts{key: "v1", with: map[string]any{"version": "1.0.0"}}).out)
	v2 := decode[store.LocalActivation](t, b.run(t, "local.instance_start", callOpts{key: "v2", with: map[string]any{"version": "2.0.0"}}).out)

	// A new flightdeck process on the same node finds both alive: adopted.
	p2 := newProvider(t, b.st, "node-a")
	rep, err := p2.Recover(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{v1.InstanceID, v2.InstanceID}, rep.Adopted, rep.String())

	// Both processes die (host reboot): the current one is restarted, the
	// standby is marked stopped.
	b.p.StopAll()
	require.False(t, ours(v1.PID, v1.InstanceID))
	require.False(t, ours(v2.PID, v2.InstanceID))
	rep, err = p2.Recover(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{v2.InstanceID}, rep.Restarted, rep.String())
	require.Equal(t, []string{v1.InstanceID}, rep.Stopped, rep.String())
	tg := b.current(t, "shop.staging")
	require.Equal(t, v2.InstanceID, tg.InstanceID)
	require.NotEqual(t, v2.Port, tg.Port)
	require.Contains(t, get(t, tg.Port), "demo app version 2.0.0")

	// Another node's instances are not this node's business.
	p3 := newProvider(t, b.st, "node-b")
	rep, err = p3.Recover(ctx)
	require.NoError(t, err)
	require.Equal(t, "adopted 0, restarted 0, stopped 0, failed 0", rep.String())
}

func TestDemoApp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"--version", "bad version"}, {"--version", "1", "extra"}, {"--bogus"}} {
		require.Error(t, RunDemoApp(t.Context(), args, io.Discard, io.Discard), "%v", args)
	}
}
