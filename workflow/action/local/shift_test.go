package local

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/store"
)

// TestTrafficShift: a canary beside the current instance, shifted and
// undone step by step, and the shift's bad inputs.
func TestTrafficShift(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	require.NoError(t, b.run(t, "local.dns_create", callOpts{key: "dns"}).err)

	// No canary yet: the shift fails, saying so, and is not retried.
	c := b.run(t, "local.traffic_shift", callOpts{key: "early", with: map[string]any{"weight": 20}})
	require.ErrorContains(t, c.err, "no canary on route shop.staging")
	require.True(t, permanent(c.err))
	for _, w := range []any{101, -1, 2.5, "20%", "abc"} {
		c := b.run(t, "local.traffic_shift", callOpts{key: "bad", with: map[string]any{"weight": w}})
		require.ErrorContains(t, c.err, "with.weight: want a whole number from 0 to 100", "%v", w)
		require.True(t, permanent(c.err))
	}
	c = b.run(t, "local.instance_start", callOpts{key: "v1", with: map[string]any{"version": "1.0.0", "weight": 101}})
	require.ErrorContains(t, c.err, "with.weight")

	v1 := b.run(t, "local.instance_start", callOpts{key: "v1", with: map[string]any{"version": "1.0.0", "weight": 0}})
	require.NoError(t, v1.err)
	require.False(t, decode[store.LocalActivation](t, v1.out).Canary, "a route nothing serves gives the new instance everything")
	v2 := b.run(t, "local.instance_start", callOpts{key: "v2", with: map[string]any{"version": "2.0.0", "weight": 0}})
	require.NoError(t, v2.err)
	act := decode[store.LocalActivation](t, v2.out)
	require.True(t, act.Canary)
	route := func() *store.LocalRoute {
		r, err := b.st.LocalRouteGet(ctx, "shop.staging")
		require.NoError(t, err)
		return r
	}
	require.Equal(t, act.InstanceID, route().CanaryID)
	require.Equal(t, act.PreviousID, route().InstanceID)

	s20 := b.run(t, "local.traffic_shift", callOpts{key: "s20", with: map[string]any{"weight": "20"}})
	require.NoError(t, s20.err)
	require.Equal(t, 20, route().CanaryWeight)
	s100 := b.run(t, "local.traffic_shift", callOpts{key: "s100", with: map[string]any{"weight": 100}})
	require.NoError(t, s100.err)
	require.Equal(t, act.InstanceID, route().InstanceID)
	require.Empty(t, route().CanaryID)

	// Undone in reverse order: back to 20 % beside v1, then to 0 %, then
	// the canary stops and v1 serves everything.
	require.NoError(t, b.run(t, "local.traffic_shift", callOpts{key: "s100", undo: true, previous: s100.out}).err)
	require.Equal(t, act.PreviousID, route().InstanceID)
	require.Equal(t, act.InstanceID, route().CanaryID)
	require.Equal(t, 20, route().CanaryWeight)
	require.NoError(t, b.run(t, "local.traffic_shift", callOpts{key: "s20", undo: true, previous: s20.out}).err)
	require.Equal(t, 0, route().CanaryWeight)
	require.NoError(t, b.run(t, "local.instance_stop", callOpts{key: "v2", undo: true, previous: v2.out}).err)
	require.Empty(t, route().CanaryID)
	require.Equal(t, act.PreviousID, route().InstanceID)
}

// The demo app's misbehaving versions: -errors fails every other request
// for / (its /healthz passes), -slow answers after 300 ms.
func TestDemoAppMisbehaves(t *testing.T) {
	t.Parallel()
	start := func(version string) string {
		pr, pw := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = RunDemoApp(ctx, []string{"--version", version}, pw, io.Discard)
			pw.Close()
		}()
		t.Cleanup(func() { cancel(); <-done })
		buf := make([]byte, 64)
		n, err := pr.Read(buf)
		require.NoError(t, err)
		go func() { _, _ = io.Copy(io.Discard, pr) }()
		return "http://" + strings.TrimSpace(strings.TrimPrefix(string(buf[:n]), "listening on "))
	}
	get := func(url string) int {
		resp, err := http.Get(url)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	errs := start("2.0.0-errors")
	require.Equal(t, http.StatusOK, get(errs+"/healthz"))
	var codes []int
	for range 4 {
		codes = append(codes, get(errs+"/"))
	}
	require.Equal(t, []int{200, 500, 200, 500}, codes)
	slow := start("2.0.0-slow")
	t0 := time.Now()
	require.Equal(t, http.StatusOK, get(slow+"/"))
	require.GreaterOrEqual(t, time.Since(t0), SlowDelay)
}
