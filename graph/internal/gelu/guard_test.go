package gelu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gptg/gptg/internal/guardmem"
)

// TestGuardPages runs Forward, Backward, ExactForward and ExactBackward
// with every row against an inaccessible page, after its last element
// and then before its first, at every length of guardmem.Lengths, on each
// family of loops this machine runs (on AVX-512 machines the exact GELU's
// 16-wide loops, then the 8-wide ones alone): any access outside the rows
// faults and fails the test. The results must equal those on ordinary
// memory, bit for bit.
func TestGuardPages(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
	families := []bool{have512}
	if have512 {
		families = append(families, false)
	}
	defer func(h bool) { have512 = h }(have512)
	for _, wide := range families {
		have512 = wide
		for _, n := range guardmem.Lengths {
			x, dy := make([]float32, n), make([]float32, n)
			for i := range x {
				x[i], dy[i] = float32(3*rng.NormFloat64()), float32(rng.NormFloat64())
			}
			outs := func(y, dx, ey, edx, x, dy []float32) {
				Forward(y, x)
				Backward(dx, x, dy)
				ExactForward(ey, x)
				ExactBackward(edx, x, dy)
			}
			y, dx, ey, edx := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
			outs(y, dx, ey, edx, x, dy)
			for _, place := range guardmem.Placements {
				label := fmt.Sprintf("AVX-512 %v, n %d, %v", wide, n, place)
				g := func(s []float32) []float32 { return guardmem.Copy(t, place, s) }
				gy, gdx, gey, gedx := g(y), g(y), g(y), g(y)
				guardmem.Run(t, label, func() { outs(gy, gdx, gey, gedx, g(x), g(dy)) })
				if !slices.EqualFunc(gy, y, same) || !slices.EqualFunc(gdx, dx, same) ||
					!slices.EqualFunc(gey, ey, same) || !slices.EqualFunc(gedx, edx, same) {
					t.Fatalf("%s: results differ between guarded and ordinary memory", label)
				}
			}
		}
	}
}
