package gemm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
)

// The benchmarks print GFLOP/s per product and its share of the core's
// float32 peak (PeakGFLOPS: a register-only FMA loop, measured once per
// run and printed by BenchmarkPeak):
//
//	go test -run '^$' -bench . ./graph/internal/gemm
//	go test -run '^$' -bench 'Mul/square' -benchtime 0.2s -count 5 ./graph/internal/gemm
//
// GEMM_THREADS=n sets Workspace.Threads (default 1). GEMM_BF16=1 makes
// the products bfloat16 (Workspace.BF16), their %peak a share of the
// bfloat16 peak (PeakBF16GFLOPS: a register-only VDPBF16PS loop).
//
// Each product reports GFLOP/s of wall time and GFLOP/cpu-s, flops per
// second of CPU time used by the process, and %peak, the latter as a share
// of the peak: on a machine shared with other work the wall-time figure
// falls with the load, the CPU-time one much less. With threads,
// GFLOP/cpu-s is the speed per core used.

var (
	peak         = sync.OnceValue(PeakGFLOPS)
	peakBF16Once = sync.OnceValue(PeakBF16GFLOPS)
	printPeak    sync.Once
)

func BenchmarkPeak(b *testing.B) {
	for range b.N {
		b.ReportMetric(PeakGFLOPS(), "GFLOP/s")
	}
}

func BenchmarkPeakBF16(b *testing.B) {
	if !haveBF16 {
		b.Skip("no AVX512_BF16 on this CPU")
	}
	for range b.N {
		b.ReportMetric(PeakBF16GFLOPS(), "GFLOP/s")
	}
}

type benchShape struct {
	name           string
	transA, transB bool
	m, n, k        int
	lda, ldb, ldc  int // 0: the tight stride
}

// benchShapes: square products, then the model's products at its real
// sizes (rows = batch·context, C = embedding, hidden = 4C), then one
// attention head's products read in place inside (T, C) matrices.
func benchShapes() []benchShape {
	var s []benchShape
	for _, n := range []int{16, 32, 64, 128, 256, 512, 1024, 2048, 4096} {
		s = append(s, benchShape{name: fmt.Sprintf("square/%d", n), m: n, n: n, k: n})
	}
	for _, rows := range []int{1, 128, 768, 4096} {
		for _, c := range []int{64, 128, 384} {
			h := 4 * c
			p := fmt.Sprintf("linear/rows%d_C%d/", rows, c)
			s = append(s,
				benchShape{name: p + "x·Wᵀ_up", transB: true, m: rows, n: h, k: c},
				benchShape{name: p + "x·Wᵀ_down", transB: true, m: rows, n: c, k: h},
				benchShape{name: p + "dy·W", m: rows, n: c, k: h},
				benchShape{name: p + "dyᵀ·x", transA: true, m: h, n: c, k: rows},
			)
		}
	}
	for _, t := range []int{32, 64, 256} {
		for _, hs := range []int{16, 32, 64} {
			c := 4 * hs // four heads side by side
			p := fmt.Sprintf("attention/T%d_hs%d/", t, hs)
			s = append(s,
				benchShape{name: p + "q·kᵀ", transB: true, m: t, n: t, k: hs, lda: c, ldb: c},
				benchShape{name: p + "w·v", m: t, n: hs, k: t, ldb: c, ldc: c},
				benchShape{name: p + "wᵀ·dy", transA: true, m: t, n: hs, k: t, ldb: c, ldc: c},
			)
		}
	}
	return s
}

func BenchmarkMul(b *testing.B) {
	threads, _ := strconv.Atoi(os.Getenv("GEMM_THREADS"))
	bf16 := os.Getenv("GEMM_BF16") == "1"
	pk, kind := peak(), "float32 on one core (register-only FMA loop)"
	if bf16 {
		pk, kind = peakBF16Once(), "bfloat16 on one core (register-only loop of its kernel: TDPBF16PS or VDPBF16PS), kernel "+BF16Kernel()
	}
	printPeak.Do(func() {
		fmt.Printf("peak: %.1f GFLOP/s %s; products on %d thread(s)\n", pk, kind, max(threads, 1))
	})
	rng := rand.New(rand.NewPCG(1, 1))
	for _, s := range benchShapes() {
		lda, ldb, ldc := s.lda, s.ldb, s.ldc
		if lda == 0 {
			lda = map[bool]int{false: s.k, true: s.m}[s.transA]
		}
		if ldb == 0 {
			ldb = map[bool]int{false: s.n, true: s.k}[s.transB]
		}
		if ldc == 0 {
			ldc = s.n
		}
		a := to32(randoms(rng, rowsOf(s.transA, s.m, s.k)*lda))
		bb := to32(randoms(rng, rowsOf(s.transB, s.k, s.n)*ldb))
		c := make([]float32, s.m*ldc)
		w := Workspace{Threads: threads, BF16: bf16}
		b.Run(s.name, func(b *testing.B) {
			cpu0 := cpuTime()
			for range b.N {
				Mul(&w, s.transA, s.transB, s.m, s.n, s.k, a, lda, bb, ldb, c, ldc, false)
			}
			g := 2 * float64(s.m) * float64(s.n) * float64(s.k) * float64(b.N) / b.Elapsed().Seconds() / 1e9
			b.ReportMetric(g, "GFLOP/s")
			if cpu := (cpuTime() - cpu0).Seconds(); cpu > 0 {
				gc := g * b.Elapsed().Seconds() / cpu
				b.ReportMetric(gc, "GFLOP/cpu-s")
				if pk > 0 {
					b.ReportMetric(100*gc/pk, "%peak")
				}
			}
		})
	}
}
