package local

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/workflow/action"
)

// BenchmarkDNSCreate is the overhead of a database-only local step
// (effect check, route insert and effect record in one transaction).
func BenchmarkDNSCreate(b *testing.B) {
	p := benchProvider(b)
	i := 0
	for b.Loop() {
		i++
		_, err := p.Action("local.dns_create").Run(b.Context(), benchInput(fmt.Sprintf("k%d", i), map[string]any{"host": fmt.Sprintf("app%d.bench", i)}))
		require.NoError(b, err)
	}
}

// BenchmarkInstanceStart is a blue/green switch: start a demo app, wait
// for its health check, make it current (stopping the older standby).
func BenchmarkInstanceStart(b *testing.B) {
	p := benchProvider(b)
	_, err := p.Action("local.dns_create").Run(b.Context(), benchInput("dns", nil))
	require.NoError(b, err)
	i := 0
	for b.Loop() {
		i++
		_, err := p.Action("local.instance_start").Run(b.Context(), benchInput(fmt.Sprintf("v%d", i), map[string]any{"version": fmt.Sprintf("1.0.%d", i)}))
		require.NoError(b, err)
	}
}

func benchProvider(b *testing.B) *Provider {
	st := dbtest.Store(b)
	testfactory.User(b, st, "dev@acme.test", "acme", auth.RoleDeployer)
	// LOCAL_BENCH_EXE=bin/flightdeck measures the real binary instead of
	// the test binary standing in for it.
	exe := cmp.Or(os.Getenv("LOCAL_BENCH_EXE"), os.Args[0])
	p, err := New(Config{Store: st, Logger: slog.New(slog.DiscardHandler), Node: "bench", Executable: exe, HealthTimeout: 30 * time.Second})
	require.NoError(b, err)
	b.Cleanup(p.StopAll)
	return p
}

func benchInput(key string, with map[string]any) action.Input {
	return action.Input{Team: "acme", IdempotencyKey: key, With: with, Params: map[string]any{"app": "shop", "env": "staging"},
		Log: func(string) {}, Output: io.Discard}
}
