//go:build amd64 && !purego

package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAMXEncodings: every tile instruction amx_amd64.s writes as BYTEs
// is the one its comment names (objdump reads the test binary).
func TestAMXEncodings(t *testing.T) {
	checkBYTEs(t, "amx_amd64.s", 2, "ldtilecfg", "tilerelease", "tilezero", "tileloadd", "tilestored", "tdpbf16ps")
}

// TestAMXKernelBits: the AMX kernel gives the Go twin's bits
// (kernelBF16Go: the model, chunk after chunk) on the same words in pairs
// order (A rows laid out in tiles by amxTiles), on hard cases (bf16Words: any exponent, ties, products near
// float32's smallest normal; every third trial all tiny, so that the
// chunks' sums are often denormal and flushed), one block and several down a panel, from
// zero and added to C or a bias, one chunk and many. TDPBF16PS against
// the model, as TestBF16KernelBits is VDPBF16PS.
func TestAMXKernelBits(t *testing.T) {
	needAMX(t)
	const mr, nr = 32, 32
	rng := rand.New(rand.NewPCG(55, 56))
	tmp := make([]float32, mr*nr)
	for _, kp := range []int{16, 32, 64, 256} {
		for _, strips := range []int{1, 3} {
			for _, addKind := range []string{"none", "c", "bias"} {
				for trial := range 10 {
					tiny := trial%3 == 2 // chunk sums near 2⁻¹²⁶, which the model flushes
					a, b := bf16Words(rng, strips*mr*kp, tiny), bf16Words(rng, kp*nr, tiny)
					ldc := nr + 3
					c0 := to32(randoms(rng, strips*mr*ldc))
					got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
					var add []float32
					ldAdd := 0
					switch addKind {
					case "c":
						add, ldAdd = c0, ldc
					case "bias":
						add = to32(randoms(rng, nr))
					}
					amxKernel(kp/16, strips, amxTiles(a, strips*mr, kp), b, got, ldc, add, ldAdd, tmp)
					for s := range strips {
						var addS []float32
						if add != nil {
							addS = add[s*mr*ldAdd:]
						}
						kernelBF16Go(mr, nr, mr, nr, kp, a[s*mr*kp:], kp, 1, b, want[s*mr*ldc:], ldc, addS, ldAdd)
					}
					for x := range got {
						if g, w := got[x], want[x]; !sameBits(g, w) {
							t.Fatalf("kp %d strips %d add %s trial %d: element (%d, %d) = %g (%#08x), twin %g (%#08x)",
								kp, strips, addKind, trial, x/ldc, x%ldc, g, math.Float32bits(g), w, math.Float32bits(w))
						}
					}
				}
			}
		}
	}
}

// amxTiles lays out rows of A (kp words each, row after row) in the AMX
// kernel's tiles: per strip of 32 rows, per chunk of 16 words, the
// strip's 32 rows of the chunk.
func amxTiles(a []uint32, rows, kp int) []uint32 {
	const mr, words = 32, 16
	out := make([]uint32, len(a))
	chunks := kp / words
	for r := range rows {
		for q := range kp {
			s, c := r/mr, q/words
			out[((s*chunks+c)*mr+r%mr)*words+q%words] = a[r*kp+q]
		}
	}
	return out
}
