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

// TestGuardPagesFixedOutputs: dotAVX2 adds into an [8]float64 in Go; here
// that array and the rows end at (then start after) an inaccessible page,
// so that writing more than the array faults. The sums must be the Go
// loop's partial sums, bit for bit.
func TestGuardPagesFixedOutputs(t *testing.T) {
	if !haveAsm {
		t.Log("no AVX2 here (or purego): only the Go loops exist")
		return
	}
	const n = 40
	rng := rand.New(rand.NewPCG(15, 16))
	w0, dw0 := make([]float32, n), make([]float32, n)
	var want [8]float64
	for i := range n {
		w0[i], dw0[i] = float32(rng.Float64()), float32(rng.NormFloat64())
		want[i%8] += float64(float64(w0[i]) * float64(dw0[i]))
	}
	for _, place := range guardmem.Placements {
		w, dw, s := guardmem.Copy(t, place, w0), guardmem.Copy(t, place, dw0), guardmem.Copy(t, place, make([]float64, 8))
		guardmem.Run(t, place.String(), func() { dotAVX2(&w[0], &dw[0], n, (*[8]float64)(s)) })
		for i, v := range s {
			if math.Float64bits(v) != math.Float64bits(want[i]) {
				t.Fatalf("%v: partial sum %d = %v, want %v", place, i, v, want[i])
			}
		}
	}
}
