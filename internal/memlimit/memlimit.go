// Package memlimit says how much more memory this process may take before
// the system refuses it: the tightest of its address-space and data limits
// (ulimit -v, ulimit -d), its cgroup's memory.max and the machine's memory.
// gptg's memory estimates are checked against it as well as against the
// configured limit, so that a model too big for the machine or container
// is refused in one line instead of ending in the Go runtime's
// "out of memory" trace or the kernel's OOM kill.
package memlimit

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Headroom is how many more bytes the process may use, and the limit
// that decides it ("ulimit -v 2500000 KiB", "the cgroup's memory.max", …).
type Headroom struct {
	Bytes float64
	Limit string
}

// Find returns the tightest headroom of the limits that apply; ok is false
// when none can be read (another OS, no /proc).
func Find() (h Headroom, ok bool) {
	status := procStatus()
	consider := func(limit, used float64, what string) {
		left := max(limit-used, 0)
		if !ok || left < h.Bytes {
			h, ok = Headroom{left, what}, true
		}
	}
	var r syscall.Rlimit
	// Go reserves address space well beyond what it touches (1.6 GB of
	// VmSize for a 27 MB process), so ulimit -v counts VmSize, not the RSS.
	if syscall.Getrlimit(syscall.RLIMIT_AS, &r) == nil && r.Cur != rlimInfinity {
		consider(float64(r.Cur), status["VmSize"], fmt.Sprintf("ulimit -v %d KiB", r.Cur/1024))
	}
	if syscall.Getrlimit(syscall.RLIMIT_DATA, &r) == nil && r.Cur != rlimInfinity {
		consider(float64(r.Cur), status["VmData"], fmt.Sprintf("ulimit -d %d KiB", r.Cur/1024))
	}
	if limit, used, found := cgroupMemory(); found {
		consider(limit, used, "the cgroup's memory.max")
	}
	if total := memTotal(); total > 0 {
		consider(total, status["VmRSS"], "the machine's memory")
	}
	return h, ok
}

const rlimInfinity = ^uint64(0)

// procStatus reads the Vm* sizes of /proc/self/status, in bytes.
func procStatus() map[string]float64 {
	m := map[string]float64{}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return m
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, found := strings.Cut(s.Text(), ":")
		if !found || !strings.HasPrefix(k, "Vm") {
			continue
		}
		if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64); err == nil {
			m[k] = kb * 1024
		}
	}
	return m
}

// memTotal is /proc/meminfo's MemTotal in bytes (0 if unknown).
func memTotal() float64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, found := strings.CutPrefix(line, "MemTotal:"); found {
			if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64); err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// cgroupMemory is the process's cgroup v2 memory.max and memory.current
// (found is false without a limit: "max", cgroup v1, no cgroup fs).
func cgroupMemory() (limit, used float64, found bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, 0, false
	}
	for line := range strings.Lines(string(b)) {
		path, ok := strings.CutPrefix(strings.TrimSpace(line), "0::")
		if !ok {
			continue
		}
		dir := filepath.Join("/sys/fs/cgroup", path)
		max, err1 := os.ReadFile(filepath.Join(dir, "memory.max"))
		cur, err2 := os.ReadFile(filepath.Join(dir, "memory.current"))
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		l, err1 := strconv.ParseFloat(strings.TrimSpace(string(max)), 64)
		u, err2 := strconv.ParseFloat(strings.TrimSpace(string(cur)), 64)
		if err1 != nil || err2 != nil { // "max": no limit
			return 0, 0, false
		}
		return l, u, true
	}
	return 0, 0, false
}
