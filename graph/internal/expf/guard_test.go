package expf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gptg/gptg/internal/guardmem"
)

// TestGuardPages runs Exps, LogSumExp, Softmax and SoftmaxBackward with
// every row against an inaccessible page, after its last element and
// then before its first, at every length of guardmem.Lengths (the
// assembly's tails go under masks, which must not touch the page): any
// access outside the rows faults and fails the test. The results must
// equal those on ordinary memory, bit for bit.
func TestGuardPages(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
	for _, n := range guardmem.Lengths {
		x, dw := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], dw[i] = float32(3*rng.NormFloat64()), float32(rng.NormFloat64())
		}
		// On ordinary memory.
		y := make([]float32, n)
		Exps(y, x, 0.5)
		lse := 0.0
		if n > 0 {
			lse = LogSumExp(x)
		}
		w := slices.Clone(x)
		Softmax(w, 0.7)
		ds := make([]float32, n)
		SoftmaxBackward(ds, w, dw, 0.7)
		for _, place := range guardmem.Placements {
			label := fmt.Sprintf("n %d, %v", n, place)
			gx, gy, gw := guardmem.Copy(t, place, x), guardmem.Copy(t, place, y), guardmem.Copy(t, place, x)
			gdw, gds, gw2 := guardmem.Copy(t, place, dw), guardmem.Copy(t, place, ds), guardmem.Copy(t, place, w)
			glse := 0.0
			guardmem.Run(t, label, func() {
				Exps(gy, gx, 0.5)
				if n > 0 {
					glse = LogSumExp(gx)
				}
				Softmax(gw, 0.7)
				SoftmaxBackward(gds, gw2, gdw, 0.7)
			})
			if !slices.EqualFunc(gy, y, same) || !slices.EqualFunc(gw, w, same) || !slices.EqualFunc(gds, ds, same) ||
				math.Float64bits(glse) != math.Float64bits(lse) {
				t.Fatalf("%s: results differ between guarded and ordinary memory", label)
			}
		}
	}
}
