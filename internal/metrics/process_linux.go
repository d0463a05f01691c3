package metrics

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processCollector serves the process's figures from /proc/self and
// getrusage, with client_golang's names and help.
type processCollector struct {
	start float64 // unix seconds; read once, it does not change
}

// NewProcessCollector returns the process's metrics:
// process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_open_fds, process_max_fds and
// process_start_time_seconds.
func NewProcessCollector() Metric { return &processCollector{start: startTime()} }

var processNames = []string{"process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
	"process_open_fds", "process_max_fds", "process_start_time_seconds"}

func (*processCollector) names() []string { return processNames }

// userHZ is the unit of /proc's clock-tick fields, fixed at 100 in the
// kernel's ABI whatever the kernel's own tick rate.
const userHZ = 100

func (p *processCollector) collect(e *encoder) {
	one := func(name, help, typ string, v float64) {
		e.family(name, help, typ).sample(name, nil, nil, "", "", v)
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
		one("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter", cpu)
	}
	if f := statFields(); len(f) > 21 {
		vsize, _ := strconv.ParseFloat(f[20], 64)
		rss, _ := strconv.ParseFloat(f[21], 64)
		one("process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", vsize)
		one("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", rss*float64(os.Getpagesize()))
	}
	if d, err := os.ReadDir("/proc/self/fd"); err == nil {
		one("process_open_fds", "Number of open file descriptors.", "gauge", float64(len(d)))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		one("process_max_fds", "Maximum number of open file descriptors.", "gauge", float64(lim.Cur))
	}
	if p.start > 0 {
		one("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge", p.start)
	}
}

// statFields are /proc/self/stat's fields after the command name (which
// may hold spaces, so it is cut at its closing parenthesis): f[0] is the
// state, field 3 in proc(5), so proc(5)'s field n is f[n-3].
func statFields() []string {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// startTime is when the process started, in unix seconds: boot time
// (/proc/stat btime) plus starttime (field 22, in clock ticks); 0 when
// unknown.
func startTime() float64 {
	f := statFields()
	b, err := os.ReadFile("/proc/stat")
	if len(f) <= 19 || err != nil {
		return 0
	}
	ticks, err := strconv.ParseFloat(f[19], 64)
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			boot, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
			if err != nil {
				return 0
			}
			return boot + ticks/userHZ
		}
	}
	return 0
}
