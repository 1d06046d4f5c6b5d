package gemm

import (
	"fmt"
	"testing"
)

// BenchmarkKernel times the micro-kernels alone on packed operands that
// sit in L1 (k = 256): the ceiling for a product.
func BenchmarkKernel(b *testing.B) {
	for _, p := range paths()[1:] {
		for _, k := range []int{16, 64, 256} {
			withPath(p, false, func() {
				ks, _ := kernelsFor[float32]()
				a, bb := make([]float32, ks.mr*k), make([]float32, ks.nr*k)
				c := make([]float32, ks.mr*ks.nr)
				b.Run(fmt.Sprintf("%v/k%d", p, k), func(b *testing.B) {
					cpu0 := cpuTime()
					for range b.N {
						microKernel(ks, true, k, a, 1, ks.mr, bb, ks.nr, c, ks.nr, true)
					}
					f := 2 * float64(ks.mr*ks.nr*k*b.N)
					b.ReportMetric(f/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					b.ReportMetric(f/(cpuTime()-cpu0).Seconds()/1e9, "GFLOP/cpu-s")
				})
			})
		}
	}
}
