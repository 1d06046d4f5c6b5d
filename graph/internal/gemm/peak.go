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
func PeakGFLOPS() float64 { return bestOf(peakLoops()) }

// PeakBF16GFLOPS is PeakGFLOPS for bfloat16 products, on the kernel
// they run: a register-only TDPBF16PS loop on AMX tiles (four
// instructions of 16·16·32 multiply-adds an iteration) where they run on
// AMX, else a register-only VDPBF16PS loop (32 multiply-adds an
// instruction on 512-bit registers) where the CPU has AVX512_BF16; else 0.
func PeakBF16GFLOPS() float64 {
	switch {
	case bf16AMX():
		return bestOf([]peakLoop{{"AMX-BF16", amxPeak, 4 * 16 * 16 * 32 * 2}})
	case haveBF16:
		return bestOf([]peakLoop{{"AVX512_BF16", peakBF16, 16 * 16 * 2 * 2}})
	}
	return 0
}

// BF16PeakRatio is PeakBF16GFLOPS over PeakGFLOPS on the core it runs
// on, where bfloat16 products run an assembly kernel; else 0. Above 1 a
// bfloat16 product can beat float32's; at or below it cannot (an Intel
// core of the Sapphire Rapids kind measures 0.5 for VDPBF16PS: it starts
// one every two cycles and two FMAs a cycle; its AMX tiles measure about
// 16 times float32's peak). It takes about 0.2 s.
func BF16PeakRatio() float64 {
	if !bf16Asm() {
		return 0
	}
	f32 := PeakGFLOPS()
	if f32 == 0 {
		return 0
	}
	return PeakBF16GFLOPS() / f32
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
