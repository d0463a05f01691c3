package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuBusy is the CPU time this machine has spent working since boot: user,
// nice, system, irq and softirq of every core from /proc/stat, without idle,
// iowait and steal (time the hypervisor gave to other machines). ok is false
// where there is no /proc/stat.
//
// bench queue reads it around the burn-down and around each pgbench run.
// Work per task and per transaction then compares the two even when the
// machine's speed drifts between them: on a virtual machine much of that
// drift is stolen time, which this leaves out. The figures are the whole
// machine's, client included, so they mean something only on a machine
// that runs nothing else.
func cpuBusy() (d time.Duration, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, false
	}
	fields := strings.Fields(sc.Text())
	// cpu user nice system idle iowait irq softirq steal …
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, false
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		n, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	// USER_HZ: 100 on every Linux architecture Go supports.
	return time.Duration(ticks) * (time.Second / 100), true
}

// cpuMeter measures the busy CPU time of one stretch of work.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPU() cpuMeter {
	d, ok := cpuBusy()
	return cpuMeter{start: d, ok: ok}
}

// perOp is the busy CPU time in µs per op since the meter started (0 when
// it cannot be read).
func (m cpuMeter) perOp(ops int64) float64 {
	end, ok := cpuBusy()
	if !m.ok || !ok || ops <= 0 {
		return 0
	}
	return float64(end-m.start) / float64(time.Microsecond) / float64(ops)
}
