//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

// peakAVX512 runs n iterations of 16 independent 512-bit float32 FMAs
// (512 flops each); peakAVX2 n iterations of 12 256-bit ones (192 flops).
//
//go:noescape
func peakAVX512(n int)

//go:noescape
func peakAVX2(n int)

// peakLoops lists the register-only FMA loops this CPU can run, with the
// float32 flops of one iteration.
func peakLoops() []peakLoop {
	loops := []peakLoop{}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		loops = append(loops, peakLoop{"AVX2", peakAVX2, 12 * 8 * 2})
	}
	if cpu.X86.HasAVX512F {
		loops = append(loops, peakLoop{"AVX-512", peakAVX512, 16 * 16 * 2})
	}
	return loops
}
