package handlers_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/handlers"
	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/action/local"
)

// demoApp runs the demo app (the code flightdeck demoapp runs) in this
// process and returns its port.
func demoApp(b *testing.B, version string) int {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = local.RunDemoApp(ctx, []string{"--version", version}, pw, io.Discard)
		pw.Close()
	}()
	b.Cleanup(func() { cancel(); <-done })
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(b, err)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	_, port, err := net.SplitHostPort(strings.TrimSpace(strings.TrimPrefix(line, "listening on ")))
	require.NoError(b, err)
	n, err := strconv.Atoi(port)
	require.NoError(b, err)
	return n
}

// BenchmarkLocalProxy compares requests for a demo app through
// flightdeck's proxy (a route with one instance, and one split 50/50 with a
// canary) with the same requests sent to the demo app directly. It reports
// the requests a second of one client and the p50 and p99 latency; run it
// with go test ./handlers -run '^$' -bench LocalProxy -benchtime 5000x.
func BenchmarkLocalProxy(b *testing.B) {
	st := dbtest.Store(b)
	ctx := b.Context()
	testfactory.User(b, st, "dev@acme.test", "acme", auth.RoleDeployer)
	stable, canary := demoApp(b, "1.0.0"), demoApp(b, "2.0.0")
	instance := func(host, version, key string, port, weight int) {
		inst, err := st.LocalInstanceBegin(ctx, store.LocalInstanceBeginParams{Team: "acme", Host: host, Version: version, Node: "bench", Key: key})
		require.NoError(b, err)
		require.NoError(b, st.LocalInstanceSetProcess(ctx, inst.ID, 1, port, "starting"))
		_, _, err = st.LocalInstanceActivate(ctx, inst.ID, weight, store.LocalEffect{Key: key + "-on", Action: "bench"})
		require.NoError(b, err)
	}
	for _, host := range []string{"one.bench", "split.bench"} {
		_, err := st.LocalRouteCreate(ctx, "acme", host, "", store.LocalEffect{Key: host, Action: "bench"})
		require.NoError(b, err)
		instance(host, "1.0.0", host+"-v1", stable, 100)
	}
	instance("split.bench", "2.0.0", "split-v2", canary, 50)
	srv := httptest.NewServer(handlers.New(handlers.Deps{Store: st, Logger: slog.New(slog.DiscardHandler)}))
	b.Cleanup(srv.Close)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for _, tc := range []struct{ name, url, host string }{
		{"Direct", "http://127.0.0.1:" + strconv.Itoa(stable) + "/", ""},
		{"Proxy", srv.URL + "/", "one.bench.localhost"},
		{"ProxySplit", srv.URL + "/", "split.bench.localhost"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			get := func() {
				req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
				if tc.host != "" {
					req.Host = tc.host
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			get() // warm: connections and the route cache
			lat := make([]time.Duration, 0, b.N)
			start := time.Now()
			for b.Loop() {
				t0 := time.Now()
				get()
				lat = append(lat, time.Since(t0))
			}
			elapsed := time.Since(start)
			slices.Sort(lat)
			b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
		})
	}
}
