package gemm

import (
	"math/rand/v2"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestCaches compares the cache sizes the kernels block for (CPUID on
// amd64) with what glibc's getconf reports, where it reports them; a
// build without assembly (purego, other architectures) reports none and
// the blocks keep kernelTable's sizes.
func TestCaches(t *testing.T) {
	got := caches()
	if !haveAVX { // purego, other architectures, or an x86 from before AVX
		if runtime.GOARCH != "amd64" && got != (cacheSizes{}) {
			t.Fatalf("caches() = %+v without CPUID, want none", got)
		}
		return
	}
	if got.l1d < 8<<10 || got.l1d > 1<<20 || got.l1dWays < 2 || got.l2 < got.l1d {
		t.Fatalf("caches() = %+v: not a plausible L1d and L2", got)
	}
	getconf := func(name string) int {
		out, err := exec.Command("getconf", name).Output()
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		return n
	}
	if runtime.GOOS != "linux" {
		return
	}
	if l1 := getconf("LEVEL1_DCACHE_SIZE"); l1 > 0 && l1 != got.l1d {
		t.Errorf("L1d %d bytes, getconf says %d", got.l1d, l1)
	}
	if w := getconf("LEVEL1_DCACHE_ASSOC"); w > 0 && w != got.l1dWays {
		t.Errorf("L1d %d ways, getconf says %d", got.l1dWays, w)
	}
	if l2 := getconf("LEVEL2_CACHE_SIZE"); l2 > 0 && l2 != got.l2 {
		t.Errorf("L2 %d bytes, getconf says %d", got.l2, l2)
	}
}

// withCache runs f as if the CPU reported c.
func withCache(c cacheSizes, f func()) {
	defer func(saved cacheSizes) { cache = saved }(cache)
	cache = c
	f()
}

func TestCrowdsL1(t *testing.T) {
	zen5 := cacheSizes{l1d: 48 << 10, l1dWays: 12, l2: 1 << 20}
	zen4 := cacheSizes{l1d: 32 << 10, l1dWays: 8, l2: 1 << 20}
	for _, c := range []struct {
		cache  cacheSizes
		rows   int
		stride int
		want   bool
	}{
		{zen5, 12, 6144, false}, // k 1536 float32: rows in two sets, six each
		{zen5, 12, 2048, false},
		{zen5, 12, 4096, true}, // every row in one set
		{zen5, 12, 4100, true}, // 4 bytes apart within a way: one line
		{zen5, 12, 1536, false},
		{zen5, 16, 6144, true}, // eight to a set, more than six
		{zen4, 12, 6144, true},
		{zen4, 12, 2048, true},
		{zen4, 12, 1536, false},
		{zen4, 6, 2048, false},         // the AVX2 strip: three to a set
		{cacheSizes{}, 12, 6144, true}, // nothing reported: the old rule
		{cacheSizes{}, 12, 1536, false},
	} {
		withCache(c.cache, func() {
			if got := crowdsL1(c.rows, c.stride); got != c.want {
				t.Errorf("%+v: %d rows %d bytes apart: crowdsL1 %v, want %v", c.cache, c.rows, c.stride, got, c.want)
			}
		})
	}
}

func TestMcFor(t *testing.T) {
	ks := &kernels{mr: 12, mc: 252}
	for _, c := range []struct {
		cache    cacheSizes
		kc, size int
		want     int
	}{
		{cacheSizes{l2: 1 << 20}, 384, 4, 252},    // 378 KB: fits half the L2
		{cacheSizes{l2: 1 << 20}, 1536, 4, 84},    // 1.5 MB would not: 84 rows, 516 KB
		{cacheSizes{l2: 1 << 20}, 1 << 20, 4, 12}, // never less than a strip
		{cacheSizes{}, 1536, 4, 252},              // nothing reported: the table's
	} {
		withCache(c.cache, func() {
			if got := mcFor(ks, c.kc, c.size); got != c.want {
				t.Errorf("%+v kc %d: mcFor %d, want %d", c.cache, c.kc, got, c.want)
			}
		})
	}
}

// TestMulCrowdedRows: products whose A rows crowd the L1 (packed whole
// strips of A) and whose depth makes mcFor cut A's blocks, on every path
// and twin, under the reported caches and under a small made-up L2 that
// cuts every block.
func TestMulCrowdedRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []cacheSizes{cache, {l1d: 32 << 10, l1dWays: 8, l2: 64 << 10}} {
		withCache(c, func() {
			for _, tB := range []bool{false, true} {
				mc := newCase(rng, false, tB, true, 100, 40, 300)
				mc.lda = 1024 // 4 KiB (float32) or 8 KiB apart: one set of any L1
				mc.a = randoms(rng, mc.m*mc.lda)
				checkPaths(t, "crowded", mc)
			}
		})
	}
}
