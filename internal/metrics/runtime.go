package metrics

import (
	"runtime"
	"runtime/debug"
	rm "runtime/metrics"
	"time"
)

// goCollector serves the Go runtime's figures a dashboard usually shows,
// with client_golang's names and help: goroutines, threads, GC pauses and
// the heap.
type goCollector struct{}

// NewGoCollector returns the Go runtime's metrics: go_goroutines,
// go_threads, go_gc_duration_seconds (a summary of stop-the-world pauses
// with quantiles 0, 0.25, 0.5, 0.75, 1), go_memstats_alloc_bytes,
// go_memstats_heap_inuse_bytes, go_memstats_heap_objects,
// go_memstats_sys_bytes, go_memstats_alloc_bytes_total,
// go_memstats_next_gc_bytes, go_gc_gogc_percent, go_gc_gomemlimit_bytes,
// go_sched_gomaxprocs_threads and go_info.
func NewGoCollector() Metric { return goCollector{} }

var goNames = []string{"go_goroutines", "go_threads", "go_gc_duration_seconds", "go_memstats_alloc_bytes",
	"go_memstats_alloc_bytes_total", "go_memstats_heap_inuse_bytes", "go_memstats_heap_objects", "go_memstats_next_gc_bytes",
	"go_memstats_sys_bytes", "go_gc_gogc_percent", "go_gc_gomemlimit_bytes", "go_sched_gomaxprocs_threads", "go_info"}

func (goCollector) names() []string { return goNames }

// runtime/metrics reads these without stopping the world (as
// runtime.ReadMemStats would).
var goSamples = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes",
	"/gc/heap/objects:objects", "/memory/classes/total:bytes", "/sched/gomaxprocs:threads",
	"/gc/heap/allocs:bytes", "/gc/heap/goal:bytes", "/gc/gogc:percent", "/gc/gomemlimit:bytes"}

func (goCollector) collect(e *encoder) {
	gauge := func(name, help string, v float64) {
		e.family(name, help, "gauge").sample(name, nil, nil, "", "", v)
	}
	gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	threads, _ := runtime.ThreadCreateProfile(nil)
	gauge("go_threads", "Number of OS threads created.", float64(threads))

	s := make([]rm.Sample, len(goSamples))
	for i, n := range goSamples {
		s[i].Name = n
	}
	rm.Read(s)
	val := func(i int) float64 {
		switch s[i].Value.Kind() {
		case rm.KindUint64:
			return float64(s[i].Value.Uint64())
		case rm.KindFloat64:
			return s[i].Value.Float64()
		}
		return 0 // not known to this Go version
	}
	gauge("go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", val(0))
	gauge("go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes", val(0)+val(1))
	gauge("go_memstats_heap_objects", "Number of currently allocated objects. Equals to /gc/heap/objects:objects.", val(2))
	gauge("go_memstats_sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.", val(3))
	e.family("go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.", "counter").
		sample("go_memstats_alloc_bytes_total", nil, nil, "", "", val(5))
	gauge("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.", val(6))
	gauge("go_gc_gogc_percent", "Heap size target percentage configured by the user, otherwise 100. This value is set by the GOGC environment variable, and the runtime/debug.SetGCPercent function. Sourced from /gc/gogc:percent.", val(7))
	gauge("go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function. Sourced from /gc/gomemlimit:bytes.", val(8))
	gauge("go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously. Sourced from /sched/gomaxprocs:threads.", val(4))

	gc := debug.GCStats{PauseQuantiles: make([]time.Duration, 5)}
	debug.ReadGCStats(&gc)
	f := e.family("go_gc_duration_seconds", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", "summary")
	for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		f.sample("go_gc_duration_seconds", nil, nil, "quantile", q, gc.PauseQuantiles[i].Seconds())
	}
	f.sample("go_gc_duration_seconds_sum", nil, nil, "", "", gc.PauseTotal.Seconds())
	f.sample("go_gc_duration_seconds_count", nil, nil, "", "", float64(gc.NumGC))

	e.family("go_info", "Information about the Go environment.", "gauge").
		sample("go_info", []string{"version"}, []string{runtime.Version()}, "", "", 1)
}
