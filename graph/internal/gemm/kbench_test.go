package gemm

import (
	"fmt"
	"testing"
)

// BenchmarkKernel times the micro-kernels alone on packed operands that
// sit in L1 (k = 256): the ceiling for a product. Go is kernelGo on its
// own tile.
func BenchmarkKernel(b *testing.B) {
	for _, p := range paths() {
		for _, k := range []int{16, 64, 256} {
			withPath(p, false, func() {
				ks, asm := kernelsFor[float32](16)
				a, bb := make([]float32, ks.mr*k), make([]float32, ks.nr*k)
				c := make([]float32, ks.mr*ks.nr)
				b.Run(fmt.Sprintf("%v/k%d", p, k), func(b *testing.B) {
					cpu0 := cpuTime()
					for range b.N {
						microKernel(ks, asm, k, 1, a, 1, ks.mr, 0, bb, ks.nr, c, ks.nr, c, ks.nr)
					}
					f := 2 * float64(ks.mr*ks.nr*k*b.N)
					b.ReportMetric(f/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					b.ReportMetric(f/(cpuTime()-cpu0).Seconds()/1e9, "GFLOP/cpu-s")
				})
			})
		}
	}
}

// BenchmarkKernelBF16 times the bfloat16 kernel alone on packed words in
// L1 (kp words, 2·kp steps of k; A row after row, as a product packs it
// when A is not transposed), as BenchmarkKernel does the float32 ones: 12
// rows × 32 columns of C a call (three 4×32 strips, as a product runs
// the strips of a block in one call).
func BenchmarkKernelBF16(b *testing.B) {
	if !haveBF16 {
		b.Skip("no AVX512_BF16 on this CPU")
	}
	mr, nr := bf16Kernels.mr, bf16Kernels.nr
	const rows = 12
	strips := rows / mr
	for _, kp := range []int{16, 32, 128, 256} {
		a, bb := make([]uint32, rows*kp), make([]uint32, nr*kp)
		c := make([]float32, rows*nr)
		b.Run(fmt.Sprintf("k%d", 2*kp), func(b *testing.B) {
			cpu0 := cpuTime()
			for range b.N {
				microKernelBF16(kp, strips, a, kp, 1, kp*mr, bb, c, nr, c, nr)
			}
			f := 4 * float64(rows*nr*kp*b.N)
			b.ReportMetric(f/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(f/(cpuTime()-cpu0).Seconds()/1e9, "GFLOP/cpu-s")
		})
	}
}

// BenchmarkThreads times square products with 1 and 2 threads around
// parallelMinFlops (set to 0 here, so that every size is split): the size
// from which two goroutines beat one is the threshold.
func BenchmarkThreads(b *testing.B) {
	defer func(v float64) { parallelMinFlops = v }(parallelMinFlops)
	parallelMinFlops = 0
	for _, n := range []int{32, 48, 64, 96, 128, 192, 256} {
		a := make([]float32, n*n)
		c := make([]float32, n*n)
		for _, threads := range []int{1, 2} {
			w := &Workspace{Threads: threads}
			b.Run(fmt.Sprintf("%d/threads%d", n, threads), func(b *testing.B) {
				for range b.N {
					Mul(w, false, false, n, n, n, a, n, a, n, c, n, false)
				}
				b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkKernelAMX times the AMX kernel alone on packed pairs (k steps,
// whole chunks of 32): one 32×32 block and a strip of 8 blocks down one
// panel of B, as runAMX calls it, the sums stored (k512/add: added to C).
func BenchmarkKernelAMX(b *testing.B) {
	if amxWhyNot() != "" || !haveBF16 {
		b.Skip("no AMX kernel here: " + amxWhyNot())
	}
	for _, k := range []int{64, 256, 512} {
		for _, strips := range []int{1, 8} {
			for _, add := range []bool{false, true} {
				pad := k / 2
				a, bb := make([]uint32, strips*32*pad), make([]uint32, 32*pad)
				c, tmp := make([]float32, strips*32*32), make([]float32, 32*32)
				name := fmt.Sprintf("k%d/blocks%d", k, strips)
				var addTo []float32
				if add {
					name, addTo = name+"/add", c
				}
				b.Run(name, func(b *testing.B) {
					cpu0 := cpuTime()
					for range b.N {
						amxKernel(pad/16, strips, a, bb, c, 32, addTo, 32, tmp)
					}
					f := 2 * float64(strips*32*32*k*b.N)
					b.ReportMetric(f/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					b.ReportMetric(f/(cpuTime()-cpu0).Seconds()/1e9, "GFLOP/cpu-s")
				})
			}
		}
	}
}
