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

// procCPU is the CPU time (user and system) that process pid and, with
// children, its direct children have used, from /proc: the flightdeck
// process itself, or the database server's postmaster and its backends.
// Unlike cpuBusy it is not moved by other work on the machine, so a
// benchmark run beside other jobs still measures its own cost.
func procCPU(pid int, children bool) (time.Duration, bool) {
	own, ok := procStatCPU(strconv.Itoa(pid))
	if !ok || !children {
		return own, ok
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return own, true
	}
	want := strconv.Itoa(pid)
	for _, d := range dirs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		if ppid, ok := procStatField(d.Name(), 1); ok && ppid == want {
			if c, ok := procStatCPU(d.Name()); ok {
				own += c
			}
		}
	}
	return own, true
}

// procStatCPU is utime + stime of /proc/<pid>/stat.
func procStatCPU(pid string) (time.Duration, bool) {
	u, ok1 := procStatField(pid, 11)
	s, ok2 := procStatField(pid, 12)
	if !ok1 || !ok2 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(u, 10, 64)
	st, err2 := strconv.ParseInt(s, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ut+st) * (time.Second / 100), true
}

// procStatField is field i (0-based) after the command's closing
// parenthesis of /proc/<pid>/stat: 0 state, 1 ppid, 11 utime, 12 stime.
func procStatField(pid string, i int) (string, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", false
	}
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return "", false
	}
	f := strings.Fields(s[end+1:])
	if i >= len(f) {
		return "", false
	}
	return f[i], true
}

// procMeter measures the CPU time of this process plus the database
// server's processes (serverPID 0: this process only).
type procMeter struct {
	serverPID int
	start     time.Duration
	ok        bool
}

func startProcCPU(serverPID int) procMeter {
	m := procMeter{serverPID: serverPID}
	m.start, m.ok = m.read()
	return m
}

func (m procMeter) read() (time.Duration, bool) {
	own, ok := procCPU(os.Getpid(), false)
	if !ok {
		return 0, false
	}
	if m.serverPID > 0 {
		if db, ok := procCPU(m.serverPID, true); ok {
			own += db
		}
	}
	return own, true
}

// perOp is the CPU time in µs per op since the meter started.
func (m procMeter) perOp(ops int64) float64 {
	end, ok := m.read()
	if !m.ok || !ok || ops <= 0 {
		return 0
	}
	return float64(end-m.start) / float64(time.Microsecond) / float64(ops)
}
