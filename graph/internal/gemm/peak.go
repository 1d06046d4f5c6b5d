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
// CPU has (AVX2 and AVX-512 on amd64, NEON on arm64), in GFLOP/s. Taking
// the best of short runs keeps the figure right on a machine shared with
// other work: most runs are not interrupted. No product can beat it; the
// benchmarks print their speed as a share of it. It returns 0 where no
// such loop exists (purego, architectures other than amd64 and arm64). It
// takes about 0.1 s.
func PeakGFLOPS() float64 {
	best := 0.0
	for _, l := range peakLoops() {
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
