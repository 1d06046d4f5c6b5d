package memlimit

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const MiB = 1 << 20

// fakeSystem builds a fake / in a temporary folder: files maps paths
// (relative to it) to their content, a content of "DIR" makes a folder
// (a file that cannot be read as one). It points root at it and
// getrlimit at the limits given (0: none) for the test's duration.
func fakeSystem(t *testing.T, files map[string]string, ulimitV, ulimitD uint64) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if content == "DIR" {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	oldRoot, oldGet, oldIdle := root, getrlimit, heapIdle
	root = dir
	heapIdle = func() (float64, float64) { return 0, 0 }
	getrlimit = func(which int, r *syscall.Rlimit) error {
		r.Cur, r.Max = rlimInfinity, rlimInfinity
		switch {
		case which == syscall.RLIMIT_AS && ulimitV > 0:
			r.Cur = ulimitV
		case which == syscall.RLIMIT_DATA && ulimitD > 0:
			r.Cur = ulimitD
		}
		return nil
	}
	t.Cleanup(func() { root, getrlimit, heapIdle = oldRoot, oldGet, oldIdle })
}

// A process of 1,600 MiB of address space (100 MiB of data, 50 MiB
// resident, every thread it will have already running) on a machine of
// 16 GiB.
func baseFiles() map[string]string {
	return map[string]string{
		"proc/self/status": "Name:\tgptg\nVmPeak:\t 1700000 kB\nVmSize:\t 1638400 kB\nVmData:\t  102400 kB\nVmRSS:\t   51200 kB\n" +
			"Threads:\t" + strconv.Itoa(runtime.GOMAXPROCS(0)+expectedExtraThreads) + "\nCpus_allowed_list:\t0-1\n",
		"proc/meminfo":     "MemTotal:       16777216 kB\nMemFree:         1000 kB\nHugePages_Total:       0\n",
		"proc/self/cgroup": "",
	}
}

// with returns base with the extra files added.
func with(base map[string]string, extra map[string]string) map[string]string {
	for k, v := range extra {
		base[k] = v
	}
	return base
}

const (
	v1Mountinfo = "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
		"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	v2Mountinfo = "25 22 0:23 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
	v1NoLimit   = "9223372036854771712\n"
)

func TestFind(t *testing.T) {
	machine := Headroom{16384*MiB - 50*MiB, "the machine's memory", false}
	for _, tc := range []struct {
		name  string
		files map[string]string
		v, d  uint64
		want  Headroom
	}{
		{"no limit but the machine", baseFiles(), 0, 0, machine},
		{"ulimit -v counts VmSize", baseFiles(), 2500000 * 1024, 0,
			Headroom{2500000*1024 - 1638400*1024, "ulimit -v 2500000 KiB", true}},
		{"ulimit -d counts VmData", baseFiles(), 0, 300 * 1024 * 1024,
			Headroom{200 * MiB, "ulimit -d 307200 KiB", true}},
		{"the tighter of -v and -d", baseFiles(), 1700 * 1024 * 1024, 400 * 1024 * 1024,
			Headroom{(1700 - 1600) * MiB, "ulimit -v 1740800 KiB", true}},
		{"ulimit -v already exceeded: none left", baseFiles(), 1000 * 1024 * 1024, 0,
			Headroom{0, "ulimit -v 1024000 KiB", true}},
		{"cgroup v1 (hybrid, no memory in v2)", with(baseFiles(), map[string]string{
			"proc/self/mountinfo":                                        v1Mountinfo,
			"proc/self/cgroup":                                           "9:name=systemd:/\n4:memory:/process_api/job\n1:cpu:/\n0::/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                 v1NoLimit,
			"sys/fs/cgroup/memory/memory.usage_in_bytes":                 "8000000000\n",
			"sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":     v1NoLimit,
			"sys/fs/cgroup/memory/process_api/memory.usage_in_bytes":     "7000000000\n",
			"sys/fs/cgroup/memory/process_api/job/memory.limit_in_bytes": "943718400\n",
			"sys/fs/cgroup/memory/process_api/job/memory.usage_in_bytes": "209715200\n",
			"sys/fs/cgroup/memory/process_api/job/memory.stat":           "cache 1\ninactive_file 5\ntotal_inactive_file 104857600\n",
			"sys/fs/cgroup/unified/cgroup.procs":                         "1\n",
		}), 0, 0, Headroom{900*MiB - 100*MiB, "the memory limit of cgroup /process_api/job (memory.limit_in_bytes 900 MiB)", false}},
		{"cgroup v1: active page cache is reclaimable, mapped and dirty pages are not", with(baseFiles(), map[string]string{
			"proc/self/mountinfo":                            v1Mountinfo,
			"proc/self/cgroup":                               "4:memory:/job\n",
			"sys/fs/cgroup/memory/job/memory.limit_in_bytes": "943718400\n",
			"sys/fs/cgroup/memory/job/memory.usage_in_bytes": "838860800\n",
			// 700 MiB of usage is page cache: 100 inactive, 600 active, of which
			// 30 mapped, 20 dirty, 10 under writeback stay.
			"sys/fs/cgroup/memory/job/memory.stat": "total_inactive_file 104857600\ntotal_active_file 629145600\n" +
				"total_mapped_file 31457280\ntotal_dirty 20971520\ntotal_writeback 10485760\n",
		}), 0, 0, Headroom{900*MiB - (800*MiB - 640*MiB), "the memory limit of cgroup /job (memory.limit_in_bytes 900 MiB)", false}},
		{"cgroup v2: mapped pages beyond the active ones still leave the inactive reclaimable", with(baseFiles(), map[string]string{
			"proc/self/mountinfo":              v2Mountinfo,
			"proc/self/cgroup":                 "0::/job\n",
			"sys/fs/cgroup/job/memory.max":     "524288000\n",
			"sys/fs/cgroup/job/memory.current": "314572800\n",
			"sys/fs/cgroup/job/memory.stat":    "inactive_file 104857600\nactive_file 10485760\nfile_mapped 52428800\n",
		}), 0, 0, Headroom{500*MiB - 200*MiB, "the memory limit of cgroup /job (memory.max 500 MiB)", false}},
		{"cgroup v1 without a limit", with(baseFiles(), map[string]string{
			"proc/self/mountinfo":                            v1Mountinfo,
			"proc/self/cgroup":                               "4:memory:/job\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":     v1NoLimit,
			"sys/fs/cgroup/memory/memory.usage_in_bytes":     "8000000000\n",
			"sys/fs/cgroup/memory/job/memory.limit_in_bytes": v1NoLimit,
			"sys/fs/cgroup/memory/job/memory.usage_in_bytes": "100\n",
		}), 0, 0, machine},
		{"cgroup v1 nested: the parent's limit is tighter", with(baseFiles(), map[string]string{
			"proc/self/mountinfo":                            v1Mountinfo,
			"proc/self/cgroup":                               "4:memory,cpu:/a/b\n",
			"sys/fs/cgroup/memory/a/memory.limit_in_bytes":   "1073741824\n",
			"sys/fs/cgroup/memory/a/memory.usage_in_bytes":   "838860800\n",
			"sys/fs/cgroup/memory/a/b/memory.limit_in_bytes": "2147483648\n",
			"sys/fs/cgroup/memory/a/b/memory.usage_in_bytes": "104857600\n",
		}), 0, 0, Headroom{1024*MiB - 800*MiB, "the memory limit of cgroup /a (memory.limit_in_bytes 1024 MiB)", false}},
		{"cgroup v2", with(baseFiles(), map[string]string{
			"proc/self/mountinfo":                         v2Mountinfo,
			"proc/self/cgroup":                            "0::/user.slice/job\n",
			"sys/fs/cgroup/user.slice/job/memory.max":     "524288000\n",
			"sys/fs/cgroup/user.slice/job/memory.current": "104857600\n",
			"sys/fs/cgroup/user.slice/job/memory.stat":    "anon 1\ninactive_file 52428800\n",
			"sys/fs/cgroup/user.slice/memory.max":         "max\n",
			"sys/fs/cgroup/user.slice/memory.current":     "999999999\n",
		}), 0, 0, Headroom{500*MiB - 50*MiB, "the memory limit of cgroup /user.slice/job (memory.max 500 MiB)", false}},
		{"cgroup v2 \"max\" everywhere", with(baseFiles(), map[string]string{
			"proc/self/mountinfo":              v2Mountinfo,
			"proc/self/cgroup":                 "0::/job\n",
			"sys/fs/cgroup/job/memory.max":     "max\n",
			"sys/fs/cgroup/job/memory.current": "1048576\n",
		}), 0, 0, machine},
		{"cgroup v2 nested three deep, the middle one decides", with(baseFiles(), map[string]string{
			"proc/self/mountinfo":                v2Mountinfo,
			"proc/self/cgroup":                   "0::/a/b/c\n",
			"sys/fs/cgroup/a/memory.max":         "4294967296\n",
			"sys/fs/cgroup/a/memory.current":     "1073741824\n",
			"sys/fs/cgroup/a/b/memory.max":       "1610612736\n",
			"sys/fs/cgroup/a/b/memory.current":   "1073741824\n",
			"sys/fs/cgroup/a/b/c/memory.max":     "max\n",
			"sys/fs/cgroup/a/b/c/memory.current": "10485760\n",
		}), 0, 0, Headroom{512 * MiB, "the memory limit of cgroup /a/b (memory.max 1536 MiB)", false}},
		{"a container's own subtree mounted as its root", with(baseFiles(), map[string]string{
			"proc/self/mountinfo":              "25 22 0:23 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n",
			"proc/self/cgroup":                 "0::/docker/abc/sub\n",
			"sys/fs/cgroup/memory.max":         "1073741824\n",
			"sys/fs/cgroup/memory.current":     "536870912\n",
			"sys/fs/cgroup/sub/memory.max":     "max\n",
			"sys/fs/cgroup/sub/memory.current": "1\n",
		}), 0, 0, Headroom{512 * MiB, "the memory limit of cgroup /docker/abc (memory.max 1024 MiB)", false}},
		{"unreadable cgroup files are passed over", with(baseFiles(), map[string]string{
			"proc/self/mountinfo":              v2Mountinfo,
			"proc/self/cgroup":                 "0::/a/b\n",
			"sys/fs/cgroup/a/memory.max":       "garbage\n",
			"sys/fs/cgroup/a/memory.current":   "1\n",
			"sys/fs/cgroup/a/b/memory.max":     "DIR",
			"sys/fs/cgroup/a/b/memory.current": "1\n",
		}), 0, 0, machine},
		{"no mountinfo: the usual place", with(baseFiles(), map[string]string{
			"proc/self/cgroup": "4:memory:/j\n",
			"sys/fs/cgroup/memory/j/memory.limit_in_bytes": "209715200\n",
			"sys/fs/cgroup/memory/j/memory.usage_in_bytes": "104857600\n",
		}), 0, 0, Headroom{100 * MiB, "the memory limit of cgroup /j (memory.limit_in_bytes 200 MiB)", false}},
		{"cgroup tighter than ulimit -v", with(baseFiles(), map[string]string{
			"proc/self/mountinfo":            v2Mountinfo,
			"proc/self/cgroup":               "0::/j\n",
			"sys/fs/cgroup/j/memory.max":     "104857600\n",
			"sys/fs/cgroup/j/memory.current": "52428800\n",
		}), 4000000 * 1024, 0, Headroom{50 * MiB, "the memory limit of cgroup /j (memory.max 100 MiB)", false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeSystem(t, tc.files, tc.v, tc.d)
			got, ok := Find()
			if !ok || got != tc.want {
				t.Errorf("Find() = %+v, %v; want %+v", got, ok, tc.want)
			}
		})
	}
}

// TestFindNothing: without /proc (another system) there is no headroom
// to check against.
func TestFindNothing(t *testing.T) {
	fakeSystem(t, map[string]string{}, 0, 0)
	if h, ok := Find(); ok {
		t.Errorf("Find() = %+v, true without /proc; want false", h)
	}
}

// TestFindThreadsToCome: the address space of the threads the runtime
// has yet to start is not headroom (with cgo each reserves 72 MiB).
func TestFindThreadsToCome(t *testing.T) {
	files := baseFiles()
	files["proc/self/status"] = strings.Replace(files["proc/self/status"], "Threads:\t"+strconv.Itoa(runtime.GOMAXPROCS(0)+expectedExtraThreads), "Threads:\t1", 1)
	fakeSystem(t, files, 2500000*1024, 0)
	want := float64(2500000*1024-1638400*1024) - float64(runtime.GOMAXPROCS(0)+expectedExtraThreads-1)*threadReserve
	if h, _ := Find(); h.Bytes != max(want, 0) {
		t.Errorf("headroom %.0f with 1 thread running; want %.0f", h.Bytes, want)
	}
}

func TestKBFields(t *testing.T) {
	fakeSystem(t, map[string]string{"status": "Name:\tgptg\nVmSize:\t  2048 kB\nThreads:\t7\nVmBad:\t x kB\nSigQ:\t0/63414\nno colon\n"}, 0, 0)
	got := kbFields(filepath.Join(root, "status"))
	if len(got) != 2 || got["VmSize"] != 2048*1024 || got["Threads"] != 7 {
		t.Errorf("kbFields = %v; want VmSize 2097152 and Threads 7 only", got)
	}
	if got := kbFields(filepath.Join(root, "missing")); len(got) != 0 {
		t.Errorf("kbFields of a missing file = %v; want empty", got)
	}
}

func TestSoftLimit(t *testing.T) {
	for _, tc := range []struct {
		h    Headroom
		held float64
		want int64
	}{
		// a cgroup: a sixteenth and 16 MiB of margin
		{Headroom{1024 * MiB, "cgroup", false}, 10 * MiB, (10 + 1024 - 64 - 16) * MiB},
		// ulimit -v: an eighth and an arena (64 MiB)
		{Headroom{1024 * MiB, "ulimit -v", true}, 10 * MiB, (10 + 1024 - 128 - 64) * MiB},
		// little room: at least half of it
		{Headroom{64 * MiB, "ulimit -v", true}, 10 * MiB, (10 + 32) * MiB},
	} {
		if got := SoftLimit(tc.h, tc.held); got != tc.want {
			t.Errorf("SoftLimit(%+v, %.0f) = %d MiB; want %d MiB", tc.h, tc.held, got/MiB, tc.want/MiB)
		}
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/end\04`: `/end\04`, `\134x`: `\x`} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q; want %q", in, got, want)
		}
	}
}

// TestFindCountsIdleHeap: the heap a process holds and does not use is
// room for what comes next: under ulimit -v all of it (free and released
// pages are both mapped; VmSize never shrinks), under a cgroup or the
// machine the free part only (released pages are not charged), less an
// arena for scattered pages each time.
func TestFindCountsIdleHeap(t *testing.T) {
	fakeSystem(t, baseFiles(), 2000*MiB, 0)
	h, ok := Find()
	if !ok || h.Bytes != 400*MiB {
		t.Fatalf("without idle heap: %+v %v; want 400 MiB under ulimit -v", h, ok)
	}
	heapIdle = func() (float64, float64) { return 100 * MiB, 200 * MiB }
	if h, _ := Find(); h.Bytes != (400+300-64)*MiB || !strings.HasPrefix(h.Limit, "ulimit -v") {
		t.Errorf("with 100 MiB free and 200 MiB released: %.0f MiB under %s; want %d MiB under ulimit -v", h.Bytes/MiB, h.Limit, 400+300-64)
	}
	heapIdle = func() (float64, float64) { return 30 * MiB, 0 }
	if h, _ := Find(); h.Bytes != 400*MiB {
		t.Errorf("with 30 MiB free (under an arena): %.0f MiB; want 400", h.Bytes/MiB)
	}
	// The machine: 16 GiB less 50 MiB resident; free pages count, released ones do not.
	fakeSystem(t, baseFiles(), 0, 0)
	heapIdle = func() (float64, float64) { return 100 * MiB, 1000 * MiB }
	if h, _ := Find(); h.Bytes != (16*1024-50+100-64)*MiB {
		t.Errorf("the machine with 100 MiB free, 1000 released: %.0f MiB; want %d", h.Bytes/MiB, 16*1024-50+100-64)
	}
}
