package adamw

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gptg/gptg/internal/guardmem"
)

// TestGuardPages runs Update (float32), SumSquares and Scale with every
// row against an inaccessible page, after its last element and then
// before its first, at every length of guardmem.Lengths, on each family
// of loops this machine runs (on AVX-512 machines the 8-wide update, then
// the 4-wide one alone): any access outside the rows faults and fails the
// test. The results must equal those on ordinary memory, bit for bit.
func TestGuardPages(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
	c := Coefs{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Decay: 1 - 1e-4, StepSize: 1e-3, InvSqrtBias2: 1.3}
	families := []bool{have512}
	if have512 {
		families = append(families, false)
	}
	defer func(h bool) { have512 = h }(have512)
	for _, wide := range families {
		have512 = wide
		for _, n := range guardmem.Lengths {
			rows := make([][]float32, 4) // w, g, m, v
			for r := range rows {
				rows[r] = make([]float32, n)
				for i := range n {
					rows[r][i] = float32(rng.NormFloat64())
				}
			}
			rows[3] = slices.Clone(rows[3])
			for i := range rows[3] {
				rows[3][i] *= rows[3][i] // v ≥ 0
			}
			run := func(w, g, m, v []float32) float64 {
				Update(w, g, m, v, c)
				s := SumSquares(g)
				Scale(g, 0.5)
				return s
			}
			want := make([][]float32, 4)
			for r := range rows {
				want[r] = slices.Clone(rows[r])
			}
			wantSum := run(want[0], want[1], want[2], want[3])
			for _, place := range guardmem.Placements {
				label := fmt.Sprintf("AVX-512 %v, n %d, %v", wide, n, place)
				got := make([][]float32, 4)
				for r := range rows {
					got[r] = guardmem.Copy(t, place, rows[r])
				}
				var sum float64
				guardmem.Run(t, label, func() { sum = run(got[0], got[1], got[2], got[3]) })
				for r := range rows {
					if !slices.EqualFunc(got[r], want[r], same) {
						t.Fatalf("%s: row %d differs between guarded and ordinary memory", label, r)
					}
				}
				if math.Float64bits(sum) != math.Float64bits(wantSum) {
					t.Fatalf("%s: SumSquares %v on guarded memory, %v on ordinary memory", label, sum, wantSum)
				}
			}
		}
	}
}
