package gemm

import "time"

// peakLoop is a register-only multiply-add loop: run(n) does n iterations
// of flops floating-point operations each, with no memory traffic.
type peakLoop struct {
	name  string
	run   func(n int)
	flops int
}

// PeakGFLOPS measures the float32 peak of the core it runs on: the best of
// many short timed runs (≈0.3 ms each) of each register-only FMA loop the
// CPU has (AVX2 and AVX-512 on amd64), in GFLOP/s. Taking the best of short
// runs keeps the figure right on a machine shared with other work: most
// runs are not interrupted. No product can beat it; the benchmarks print
// their speed as a share of it. It returns 0 where no such loop exists
// (purego, other architectures). It takes about 0.1 s.
func PeakGFLOPS() float64 { return bestOf(peakLoops()) }

// PeakBF16GFLOPS is PeakGFLOPS for bfloat16 products: a register-only
// VDPBF16PS loop (32 multiply-adds an instruction on 512-bit registers),
// where the CPU has AVX512_BF16; else 0.
func PeakBF16GFLOPS() float64 {
	if !haveBF16 {
		return 0
	}
	return bestOf([]peakLoop{{"AVX512_BF16", peakBF16, 16 * 16 * 2 * 2}})
}

// bestOf is the best GFLOP/s of many short timed runs of each loop.
func bestOf(loops []peakLoop) float64 {
	best := 0.0
	for _, l := range loops {
		n := (1 << 25) / l.flops // ≈ 33 MFLOP a run
		for range 150 {
			start := time.Now()
			l.run(n)
			if g := float64(n*l.flops) / time.Since(start).Seconds() / 1e9; g > best {
				best = g
			}
		}
	}
	return best
}
