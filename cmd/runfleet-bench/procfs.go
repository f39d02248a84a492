package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/<pid>/stat's utime and stime: USER_HZ, 100 on
// every Linux architecture Go supports.
const userHZ = 100

// cpuTime is a process's user plus system CPU so far.
func cpuTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may hold spaces: fields are
	// counted after its closing one. utime and stime are fields 14 and 15.
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(raw[end+1:]))
	const utimeAt = 14 - 3 // fields[0] is field 3, the state
	if len(fields) <= utimeAt+1 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	var ticks int64
	for _, f := range fields[utimeAt : utimeAt+2] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// memory is a process's resident set, now and at its peak, in bytes.
type memory struct {
	rss, peak int64
}

func readMemory(pid int) (memory, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for line := range strings.Lines(string(raw)) {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var into *int64
		switch key {
		case "VmRSS":
			into = &m.rss
		case "VmHWM":
			into = &m.peak
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc/%d/status %s: %w", pid, key, err)
		}
		*into = kb << 10
	}
	if m.peak == 0 {
		return memory{}, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
	}
	return m, nil
}

// resetPeak restarts VmHWM from the current RSS (Linux ≥ 4.0), so each
// burst's peak is its own. It reports whether the kernel allowed it.
func resetPeak(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
}

// waitIdle returns the process's CPU once it has stopped rising: two
// readings idleFor apart that agree, within limit. The tail of a burst
// (acks, the last records) is thus charged to the burst.
func waitIdle(pid int, idleFor, limit time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(limit)
	last, err := cpuTime(pid)
	if err != nil {
		return 0, err
	}
	for time.Now().Before(deadline) {
		time.Sleep(idleFor)
		now, err := cpuTime(pid)
		if err != nil {
			return 0, err
		}
		if now == last {
			return now, nil
		}
		last = now
	}
	return last, nil
}

// fleetCPU is the user+system CPU of every process behind c.
func fleetCPU(c *child) (time.Duration, error) {
	var sum time.Duration
	for _, m := range c.members() {
		t, err := cpuTime(m.pid())
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// fleetIdle waits until every process behind c is idle and returns their
// CPU then.
func fleetIdle(c *child) (time.Duration, error) {
	var sum time.Duration
	for _, m := range c.members() {
		t, err := waitIdle(m.pid(), idleProbe, idleLimit)
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// fleetMemory sums the memory of every process behind c.
func fleetMemory(c *child) (memory, error) {
	var sum memory
	for _, m := range c.members() {
		mem, err := readMemory(m.pid())
		if err != nil {
			return memory{}, err
		}
		sum.rss += mem.rss
		sum.peak += mem.peak
	}
	return sum, nil
}
