// Package memlimit says how much more memory this process may take before
// the system refuses it: the tightest of its address-space and data limits
// (ulimit -v, ulimit -d), the memory limits of its cgroup and the cgroup's
// ancestors (v1 memory.limit_in_bytes, v2 memory.max) and the machine's
// memory. gptg's memory estimates are checked against it as well as
// against the configured limit, so that a model too big for the machine or
// container is refused in one line instead of ending in the Go runtime's
// "out of memory" trace or the kernel's OOM kill; and SetSoftLimit gives
// the Go runtime a soft limit below it, so that the garbage collector
// works harder instead of letting the heap grow to twice what is live.
package memlimit

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
)

// root is where the /proc and /sys files are read from: "/" but for the
// tests, which build fake trees in a temporary folder.
var root = "/"

// getrlimit is syscall.Getrlimit but for the tests.
var getrlimit = syscall.Getrlimit

// Headroom is how many more bytes the process may use, and the limit
// that decides it ("ulimit -v 2500000 KiB", "the memory limit of cgroup
// /x (memory.max)", …).
type Headroom struct {
	Bytes float64
	Limit string
	// AddressSpace: the limit counts address space (ulimit -v: VmSize,
	// ulimit -d: VmData), which Go reserves beyond what it touches,
	// rather than memory in use (a cgroup, the machine).
	AddressSpace bool
}

// Find returns the tightest headroom of the limits that apply; ok is false
// when none can be read (another OS, no /proc).
func Find() (h Headroom, ok bool) {
	status := kbFields(filepath.Join(root, "proc/self/status"))
	consider := func(c Headroom) {
		c.Bytes = max(c.Bytes, 0)
		if !ok || c.Bytes < h.Bytes {
			h, ok = c, true
		}
	}
	var r syscall.Rlimit
	// Go reserves address space well beyond what it touches (1.3 to 1.7
	// GB of VmSize for a 27 MB process), so ulimit -v counts VmSize, not
	// the RSS; and each thread still to come reserves more.
	threads := threadsToCome(status["Threads"]) * threadReserve
	// What the heap holds and does not use is reused before the runtime
	// maps more: VmSize never shrinks (Go keeps the address space it
	// released), so a long-running server's checks would otherwise get
	// stricter with every model it loaded and dropped.
	free, released := heapIdle()
	mapped, resident := reusable(free+released), reusable(free)
	if getrlimit(syscall.RLIMIT_AS, &r) == nil && r.Cur != rlimInfinity {
		consider(Headroom{float64(r.Cur) - status["VmSize"] - threads + mapped, fmt.Sprintf("ulimit -v %d KiB", r.Cur/1024), true})
	}
	if getrlimit(syscall.RLIMIT_DATA, &r) == nil && r.Cur != rlimInfinity {
		consider(Headroom{float64(r.Cur) - status["VmData"] - threads + mapped, fmt.Sprintf("ulimit -d %d KiB", r.Cur/1024), true})
	}
	for _, c := range cgroupLimits() {
		consider(Headroom{c.limit - c.used + resident, c.String(), false})
	}
	if total := kbFields(filepath.Join(root, "proc/meminfo"))["MemTotal"]; total > 0 {
		consider(Headroom{total - status["VmRSS"] + resident, "the machine's memory", false})
	}
	return h, ok
}

const rlimInfinity = ^uint64(0)

// heapIdle is the Go heap the runtime holds and does not use: free (still
// resident: a cgroup and the RSS count it) and released to the system
// (still mapped: VmSize and VmData count it). A new allocation takes
// either before the runtime maps more. A stub in tests.
var heapIdle = func() (free, released float64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0, 0
	}
	return float64(s[0].Value.Uint64()), float64(s[1].Value.Uint64())
}

// reusable is how much of idle heap bytes a check may count as room: all
// but a heap arena (64 MiB), as the idle pages are scattered and a large
// tensor needs a contiguous run of them.
func reusable(idle float64) float64 { return max(idle-heapArena, 0) }

// threadsToCome is how many more threads the runtime is expected to
// start than the running ones: one per P (GOMAXPROCS), busy computing or
// collecting garbage, and a few for system calls and the runtime itself
// (measured: eval reaches 8 threads at GOMAXPROCS 2, sample 5; 16 at 16).
func threadsToCome(running float64) float64 {
	return max(float64(runtime.GOMAXPROCS(0)+expectedExtraThreads)-running, 0)
}

const expectedExtraThreads = 6

// kbFields reads the "Key:   N kB" lines of a /proc file (status,
// meminfo) into bytes by key, and "Key:   N" lines as N (the count of
// Threads); lines of other forms are left out, and an unreadable file
// gives an empty map.
func kbFields(path string) map[string]float64 {
	m := map[string]float64{}
	f, err := os.Open(path)
	if err != nil {
		return m
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, found := strings.Cut(s.Text(), ":")
		if !found {
			continue
		}
		n, isKB := strings.CutSuffix(strings.TrimSpace(v), " kB")
		if x, err := strconv.ParseUint(n, 10, 64); err == nil && isKB {
			m[k] = float64(x) * 1024
		} else if err == nil {
			m[k] = float64(x)
		}
	}
	return m
}

// cgroupLimit is the memory limit of one cgroup: the process's own or an
// ancestor's (each limits its whole subtree).
type cgroupLimit struct {
	path  string // the cgroup, as /proc/self/cgroup names it ("/a/b")
	file  string // "memory.max" (v2) or "memory.limit_in_bytes" (v1)
	limit float64
	used  float64 // usage less the page cache the kernel can drop at once
}

func (c cgroupLimit) String() string {
	return fmt.Sprintf("the memory limit of cgroup %s (%s %.0f MiB)", c.path, c.file, c.limit/(1<<20))
}

// The two cgroup versions' files: the limit, the usage, and memory.stat's
// keys for the page cache counted in the usage (inactive and active file
// pages) and for the part of it the kernel cannot just drop (mapped into
// a process — the running binary among them — or dirty, or being written).
type cgroupFiles struct {
	limit, usage                                   string
	inactiveFile, activeFile, mapped, dirty, wback string
}

var (
	cgroupV1 = cgroupFiles{"memory.limit_in_bytes", "memory.usage_in_bytes",
		"total_inactive_file", "total_active_file", "total_mapped_file", "total_dirty", "total_writeback"}
	cgroupV2 = cgroupFiles{"memory.max", "memory.current",
		"inactive_file", "active_file", "file_mapped", "file_dirty", "file_writeback"}
)

// cgroupLimits lists the memory limits set on the process's cgroups (v1's
// memory controller and v2's unified hierarchy) and each of their
// ancestors as far up as the mounted tree shows them: the kernel enforces
// every one of them. Cgroups without a limit ("max", v1's
// 9223372036854771712) or whose files cannot be read are left out.
func cgroupLimits() []cgroupLimit {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return nil
	}
	mounts := cgroupMounts()
	var out []cgroupLimit
	for line := range strings.Lines(string(b)) {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var m mount
		var files cgroupFiles
		switch {
		case parts[0] == "0" && parts[1] == "":
			m, files = mounts.v2, cgroupV2
		case hasWord(parts[1], "memory"):
			m, files = mounts.v1, cgroupV1
		default:
			continue
		}
		out = append(out, walkUp(m, parts[2], files)...)
	}
	return out
}

// walkUp reads the limits of the cgroup at path (as /proc/self/cgroup
// names it) and of its ancestors, in the tree mounted as m.
func walkUp(m mount, path string, files cgroupFiles) []cgroupLimit {
	rel, ok := strings.CutPrefix(path, strings.TrimSuffix(m.root, "/"))
	if !ok || rel != "" && !strings.HasPrefix(rel, "/") {
		return nil // mounted from a cgroup that does not hold ours: not visible
	}
	var out []cgroupLimit
	for {
		dir := filepath.Join(root, m.point, rel)
		if c, ok := readCgroup(dir, files); ok {
			c.path = filepath.Join("/", m.root, rel)
			out = append(out, c)
		}
		if rel == "/" || rel == "" || rel == "." {
			return out
		}
		rel = filepath.Dir(rel)
	}
}

// readCgroup reads one cgroup folder's limit and usage; ok is false when
// it has no limit or its files cannot be read.
func readCgroup(dir string, files cgroupFiles) (c cgroupLimit, ok bool) {
	limit, ok := cgroupValue(filepath.Join(dir, files.limit))
	if !ok {
		return c, false
	}
	used, ok := cgroupValue(filepath.Join(dir, files.usage))
	if !ok {
		return c, false
	}
	if cache := reclaimable(statFields(filepath.Join(dir, "memory.stat")), files); cache <= used {
		used -= cache
	}
	return cgroupLimit{file: files.limit, limit: limit, used: used}, true
}

// noLimit: v1 writes "no limit" as the largest page count times the page
// size (9223372036854771712 with 4 KiB pages); any value from 2^62 up is
// taken as none.
const noLimit = 1 << 62

// cgroupValue reads a cgroup file holding one number of bytes; ok is
// false for "max", a value meaning no limit, or a file that cannot be
// read or parsed.
func cgroupValue(path string) (float64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil || v < 0 || v >= noLimit {
		return 0, false
	}
	return v, true
}

// reclaimable is the page cache the kernel reclaims before it would kill a
// process of the cgroup: all clean, unmapped file pages. Active pages count
// too — a file read twice (gptg reads a corpus to check it, then to load
// it) is active, and a long-lived container fills its usage with them —
// but never less than the inactive ones, which is what "working set"
// tools (docker stats, the kubelet) subtract.
func reclaimable(stat map[string]float64, files cgroupFiles) float64 {
	inactive := stat[files.inactiveFile]
	all := inactive + stat[files.activeFile] - stat[files.mapped] - stat[files.dirty] - stat[files.wback]
	return max(inactive, all)
}

// statFields reads the "key value" lines of a memory.stat file; an
// unreadable file gives an empty map.
func statFields(path string) map[string]float64 {
	m := map[string]float64{}
	b, err := os.ReadFile(path)
	if err != nil {
		return m
	}
	for line := range strings.Lines(string(b)) {
		k, v, found := strings.Cut(strings.TrimSpace(line), " ")
		if x, err := strconv.ParseFloat(v, 64); found && err == nil {
			m[k] = x
		}
	}
	return m
}

// mount is where a cgroup tree is mounted: the folder (point) and the
// cgroup it shows there (root; "/" but in a container that sees only its
// own subtree).
type mount struct{ root, point string }

// cgroupMounts finds the v1 memory controller's and v2's mounts in
// /proc/self/mountinfo, or takes the usual places when it cannot be read.
func cgroupMounts() (ms struct{ v1, v2 mount }) {
	ms.v1 = mount{"/", "/sys/fs/cgroup/memory"}
	ms.v2 = mount{"/", "/sys/fs/cgroup"}
	b, err := os.ReadFile(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return ms
	}
	var found1, found2 bool
	for line := range strings.Lines(string(b)) {
		// id parent major:minor root point options [optional...] - type source super-options
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		m := mount{unescape(f[3]), unescape(f[4])}
		switch {
		case g[0] == "cgroup2" && !found2:
			ms.v2, found2 = m, true
		case g[0] == "cgroup" && hasWord(g[2], "memory") && !found1:
			ms.v1, found1 = m, true
		}
	}
	return ms
}

// hasWord says whether a comma-separated list holds w.
func hasWord(list, w string) bool {
	for s := range strings.SplitSeq(list, ",") {
		if s == w {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// SetSoftLimit gives the Go runtime a soft memory limit
// (debug.SetMemoryLimit) a margin below Find's headroom, unless GOMEMLIMIT
// sets one already: with the default GOGC=100 the heap may grow to twice
// what is live before a collection, and a process that fits its limit
// with room to spare would die of the garbage it has not collected yet.
// Near the soft limit the collector runs more often instead. It returns
// the limit set, in bytes (0 when none).
func SetSoftLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	h, ok := Find()
	if !ok {
		return 0
	}
	limit := SoftLimit(h, goHeld())
	debug.SetMemoryLimit(limit)
	return limit
}

// SoftLimit is the soft limit for a runtime holding held bytes now with
// headroom h left: held plus the headroom less a margin. The runtime's
// limit counts the memory it has mapped and not returned, which a cgroup
// or the machine see; an address-space limit (ulimit -v, -d) also sees
// what it has reserved: each new heap arena (64 MiB), and the runs of free
// pages too short for the next large tensor, so its margin is wider.
func SoftLimit(h Headroom, held float64) int64 {
	margin := h.Bytes/16 + 16<<20
	if h.AddressSpace {
		margin = h.Bytes/8 + 64<<20
	}
	return int64(held + max(h.Bytes-margin, h.Bytes/2))
}

// goHeld is the memory the Go runtime holds now: what it has mapped, less
// the heap it has returned to the system (the quantity its soft limit
// bounds).
func goHeld() float64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return float64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
