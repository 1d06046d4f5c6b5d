//go:build arm64 && !purego

package gemm

// peakNEON runs n iterations of 24 independent 128-bit float32 FMLAs (192
// flops each).
//
//go:noescape
func peakNEON(n int)

// peakLoops lists the register-only FMA loop of every arm64 core.
func peakLoops() []peakLoop {
	return []peakLoop{{"NEON", peakNEON, 24 * 4 * 2}}
}
