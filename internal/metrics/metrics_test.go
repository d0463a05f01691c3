package metrics

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func scrape(t *testing.T, r *Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, "text/plain; version=0.0.4; charset=utf-8", rec.Header().Get("Content-Type"))
	return rec.Body.String()
}

func TestExpositionText(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	c := NewCounter("b_total", "Counts b.\nSecond line with a \\ backslash.")
	reqs := NewCounterVec("a_requests_total", "Requests.", []string{"route", "code", "method"})
	lat := NewHistogramVec("c_seconds", "Latency.", []float64{0.1, 1, 10}, []string{"route"})
	empty := NewCounterVec("d_total", "Nothing yet.", []string{"x"})
	r.MustRegister(c, reqs, lat, empty, NewGaugeFunc("e_gauge", "A gauge.", func() float64 { return 1.5e9 }))

	c.Add(2.5)
	c.Inc()
	reqs.WithLabelValues("/b", "200", "GET").Inc()
	reqs.WithLabelValues("/a\"q\"\\x\ny", "500", "POST").Add(3)
	reqs.WithLabelValues("/b", "200", "GET").Inc()
	reqs.WithLabelValues("/bad\xffutf8", "404", "GET").Inc()
	for _, v := range []float64{0.05, 0.1, 0.5, 2, 100} {
		lat.WithLabelValues("/x").Observe(v)
	}

	want := `# HELP a_requests_total Requests.
# TYPE a_requests_total counter
a_requests_total{code="200",method="GET",route="/b"} 2
a_requests_total{code="404",method="GET",route="/bad�utf8"} 1
a_requests_total{code="500",method="POST",route="/a\"q\"\\x\ny"} 3
# HELP b_total Counts b.\nSecond line with a \\ backslash.
# TYPE b_total counter
b_total 3.5
# HELP c_seconds Latency.
# TYPE c_seconds histogram
c_seconds_bucket{route="/x",le="0.1"} 2
c_seconds_bucket{route="/x",le="1"} 3
c_seconds_bucket{route="/x",le="10"} 4
c_seconds_bucket{route="/x",le="+Inf"} 5
c_seconds_sum{route="/x"} 102.65
c_seconds_count{route="/x"} 5
# HELP e_gauge A gauge.
# TYPE e_gauge gauge
e_gauge 1.5e+09
`
	require.Equal(t, want, scrape(t, r), "sorted families, sorted labels, escaped help and values, cumulative buckets, empty vectors left out")
}

func TestDefaultBuckets(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	h := NewHistogramVec("h_seconds", "H.", nil, nil)
	r.MustRegister(h)
	h.WithLabelValues().Observe(0.005) // le is "less or equal": the first bucket
	got := scrape(t, r)
	var les []string
	for _, m := range regexp.MustCompile(`le="([^"]+)"\} (\d+)`).FindAllStringSubmatch(got, -1) {
		les = append(les, m[1]+"="+m[2])
	}
	require.Equal(t, []string{"0.005=1", "0.01=1", "0.025=1", "0.05=1", "0.1=1", "0.25=1", "0.5=1", "1=1", "2.5=1", "5=1", "10=1", "+Inf=1"}, les)
}

func TestRegistryRefusesDuplicates(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	first := NewCounter("x_total", "X.")
	require.NoError(t, r.Register(first))
	err := r.Register(NewCounter("x_total", "X again."))
	var are AlreadyRegisteredError
	require.ErrorAs(t, err, &are)
	require.Same(t, first, are.Existing)
	require.ErrorContains(t, r.Register(NewCounterVec("x_total", "X.", []string{"a"})), "x_total")
	require.NoError(t, r.Register(NewGoCollector()))
	require.Error(t, r.Register(NewGoCollector()))

	require.Same(t, first, Registered(r, NewCounter("x_total", "X.")), "Registered hands back the existing one")
	require.Panics(t, func() { Registered(r, NewCounterVec("x_total", "X.", nil)) }, "another kind under the name")
}

func TestInvalidDefinitionsPanic(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { NewCounter("bad-name", "x") })
	require.Panics(t, func() { NewCounter("ok", "") })
	require.Panics(t, func() { NewCounterVec("ok", "x", []string{"le"}) })
	require.Panics(t, func() { NewCounterVec("ok", "x", []string{"a", "a"}) })
	require.Panics(t, func() { NewHistogramVec("ok", "x", []float64{1, 1}, nil) })
	require.Panics(t, func() { NewCounterVec("ok", "x", []string{"a"}).WithLabelValues("1", "2") })
	require.Panics(t, func() { NewCounter("ok", "x").Add(-1) })
}

func TestConcurrentUpdates(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	c := NewCounter("n_total", "N.")
	v := NewCounterVec("v_total", "V.", []string{"k"})
	h := NewHistogramVec("h_seconds", "H.", []float64{1}, []string{"k"})
	r.MustRegister(c, v, h)
	const workers, each = 8, 1000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				c.Inc()
				v.WithLabelValues([]string{"a", "b"}[i%2]).Inc()
				h.WithLabelValues("a").Observe(float64(w % 2 * 2)) // 0 or 2
				if i%100 == 0 {
					_ = scrape(t, r) // scrapes race with updates
				}
			}
		})
	}
	wg.Wait()
	got := scrape(t, r)
	require.Contains(t, got, "\nn_total 8000\n")
	require.Contains(t, got, "\nv_total{k=\"a\"} 4000\nv_total{k=\"b\"} 4000\n")
	require.Contains(t, got, "h_seconds_bucket{k=\"a\",le=\"1\"} 4000\nh_seconds_bucket{k=\"a\",le=\"+Inf\"} 8000\nh_seconds_sum{k=\"a\"} 8000\nh_seconds_count{k=\"a\"} 8000\n")
}

func TestRuntimeAndProcess(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	r.MustRegister(NewGoCollector(), NewProcessCollector())
	got := scrape(t, r)
	for _, name := range []string{"go_goroutines", "go_threads", "go_memstats_alloc_bytes", "go_memstats_heap_inuse_bytes",
		"go_memstats_sys_bytes", "go_memstats_alloc_bytes_total", "go_memstats_next_gc_bytes", "go_gc_gogc_percent",
		"go_gc_gomemlimit_bytes", "go_sched_gomaxprocs_threads", "process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
		"process_open_fds", "process_max_fds", "process_start_time_seconds"} {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(got)
		require.NotNil(t, m, "%s in\n%s", name, got)
		require.NotEqual(t, "0", m[1], name)
	}
	require.Regexp(t, `(?m)^go_info\{version="go[^"]+"\} 1$`, got)
	require.Regexp(t, `(?m)^go_gc_duration_seconds\{quantile="0.5"\} \S+$`, got)
	require.Regexp(t, `(?m)^go_gc_duration_seconds_count \d+$`, got)
	require.Contains(t, got, "# TYPE go_gc_duration_seconds summary\n")
	require.Contains(t, got, "# TYPE process_cpu_seconds_total counter\n")
	start := regexp.MustCompile(`(?m)^process_start_time_seconds (\S+)$`).FindStringSubmatch(got)[1]
	require.True(t, strings.HasPrefix(start, "1.") && strings.Contains(start, "e+09"), "a unix time: %s", start)
}
